// Shard(num_shards, index): input elements index, index + num_shards, ...
// Every input result takes a position, errors included: an element that
// failed belongs to one shard, so its error reaches that shard's reader only
// and the other shards stay aligned.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class ShardDataset : public DatasetBase {
 public:
  ShardDataset(std::shared_ptr<const DatasetBase> input, int64_t num_shards, int64_t index)
      : DatasetBase("Shard", {std::move(input)}), num_shards_(num_shards), index_(index) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override {
    if (!Validate().ok()) return kUnknownCardinality;
    const int64_t n = inputs()[0]->Cardinality();
    if (n < 0) return n;  // infinite or unknown
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  std::string Describe() const override {
    return absl::StrCat("Shard(", num_shards_, ", ", index_, ")");
  }

  absl::Status Validate() const {
    if (num_shards_ < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name(), ": num_shards must be >= 1, got ", num_shards_));
    }
    if (index_ < 0 || index_ >= num_shards_) {
      return absl::InvalidArgumentError(
          absl::StrCat(name(), ": index must be in [0, ", num_shards_, "), got ", index_));
    }
    return absl::OkStatus();
  }

  int64_t num_shards() const { return num_shards_; }
  int64_t index() const { return index_; }

 private:
  int64_t num_shards_;
  int64_t index_;
};

class ShardIterator : public IteratorBase {
 public:
  ShardIterator(const ShardDataset* d, const IteratorContext& ctx,
                std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (true) {
      absl::StatusOr<std::optional<Element>> in = input_->GetNext();
      if (IsEndOfSequence(in)) return std::nullopt;
      const int64_t position = next_position_++;
      if (position % d_->num_shards() == d_->index()) return in;
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    (*state->mutable_ints())["next_position"] = next_position_;
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(next_position_, SavedInt(state, "next_position"));
    return RestoreInput(input_.get(), state);
  }

 private:
  const ShardDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t next_position_ = 0;  // position of the next input result
};

absl::StatusOr<std::unique_ptr<IteratorBase>> ShardDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_RETURN_IF_ERROR(Validate());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new ShardIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  return Dataset(std::make_shared<ShardDataset>(base(), num_shards, index));
}

}  // namespace sluice
