// Repeat(count): the input `count` times (forever when count < 0). Each
// repetition reads a new input iterator made with ctx.WithSalt(repetition),
// so per-element seeds differ between epochs yet are reproducible. Repeating
// forever stops after a repetition that yields no element, as tf.data does,
// instead of spinning on an empty input.
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class RepeatDataset : public DatasetBase {
 public:
  RepeatDataset(std::shared_ptr<const DatasetBase> input, int64_t count)
      : DatasetBase("Repeat", {std::move(input)}), count_(count) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (count_ < 0) return n == kUnknownCardinality ? n : kInfiniteCardinality;
    if (n < 0) return n;
    if (n > std::numeric_limits<int64_t>::max() / count_) return kUnknownCardinality;
    return n * count_;
  }
  std::string Describe() const override {
    return count_ < 0 ? std::string("Repeat") : absl::StrCat("Repeat(", count_, ")");
  }

  int64_t count() const { return count_; }

 private:
  int64_t count_;
};

class RepeatIterator : public IteratorBase {
 public:
  RepeatIterator(const RepeatDataset* d, const IteratorContext& ctx,
                 std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    if (start_next_) SLUICE_RETURN_IF_ERROR(NextRepetition());
    while (input_ != nullptr) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (e) {
        element_in_repetition_ = true;
        return e;
      }
      SLUICE_RETURN_IF_ERROR(NextRepetition());
    }
    return std::nullopt;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["repetition"] = repetition_;
    ints["element_in_repetition"] = element_in_repetition_;
    ints["start_next"] = start_next_;
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(repetition_, SavedInt(state, "repetition"));
    // A repetition past the count (or below 0) would repeat for up to 2^63 epochs.
    if (repetition_ < 0 || (d_->count() >= 0 && repetition_ > d_->count())) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", d_->Describe(), " is at repetition ", repetition_));
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t element_in_repetition,
                            SavedInt(state, "element_in_repetition"));
    SLUICE_ASSIGN_OR_RETURN(int64_t start_next, SavedInt(state, "start_next"));
    element_in_repetition_ = element_in_repetition != 0;
    start_next_ = start_next != 0;
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    if (in == nullptr) {
      input_.reset();  // ended, or waiting to start the next repetition
      return absl::OkStatus();
    }
    if (repetition_ != 0 || input_ == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(input_, d_->inputs()[0]->MakeIterator(ctx().WithSalt(repetition_)));
    }
    return input_->Restore(*in);
  }

  // The repetition, then the element's source within it.
  bool DescribeLastInternal(ElementSource* out) override {
    if (input_ == nullptr) return false;
    out->push_back(repetition_);
    return input_->DescribeLast(out);
  }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    const int64_t bound = d_->count() >= 0 ? d_->count() : INT64_MAX;
    SLUICE_ASSIGN_OR_RETURN(int64_t repetition, source.NextIn(name(), 0, bound));
    if (repetition == repetition_ && input_ != nullptr) return input_->Recompute(source);
    // An earlier repetition (a Shuffle after the Repeat holds elements of two epochs): an
    // iterator of its own, salted as that repetition's was.
    // A few are kept: a shuffle buffer's elements come from two or three repetitions, in any
    // order.
    std::unique_ptr<IteratorBase>& in = recompute_inputs_[repetition];
    if (in == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(in, d_->inputs()[0]->MakeIterator(ctx().WithSalt(repetition)));
    }
    IteratorBase* const input = in.get();
    if (recompute_inputs_.size() > kRecomputeInputsKept) {
      auto oldest = recompute_inputs_.begin();
      if (oldest->first == repetition) ++oldest;
      recompute_inputs_.erase(oldest);
    }
    return input->Recompute(source);
  }

 private:
  // Ends the current repetition and starts the next one, if any. A failure to
  // make the next input iterator is returned once; the call after it moves on
  // to the repetition after (or ends, when repeating forever).
  absl::Status NextRepetition() {
    input_.reset();
    start_next_ = false;
    ++repetition_;
    const bool empty = !element_in_repetition_;
    element_in_repetition_ = false;
    if (d_->count() >= 0 ? repetition_ >= d_->count() : empty) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<IteratorBase>> in =
        d_->inputs()[0]->MakeIterator(ctx().WithSalt(repetition_));
    if (!in.ok()) {
      start_next_ = true;
      return Annotate(in.status(), produced());
    }
    input_ = std::move(*in);
    return absl::OkStatus();
  }

  const RepeatDataset* d_;
  std::unique_ptr<IteratorBase> input_;  // null once ended
  int64_t repetition_ = 0;
  bool element_in_repetition_ = false;
  bool start_next_ = false;
  static constexpr size_t kRecomputeInputsKept = 4;
  std::map<int64_t, std::unique_ptr<IteratorBase>> recompute_inputs_;  // by repetition
};

absl::StatusOr<std::unique_ptr<IteratorBase>> RepeatDataset::MakeIterator(
    const IteratorContext& ctx) const {
  std::unique_ptr<IteratorBase> input;
  if (count_ != 0) {
    SLUICE_ASSIGN_OR_RETURN(input, inputs()[0]->MakeIterator(ctx.WithSalt(0)));
  }
  return std::unique_ptr<IteratorBase>(new RepeatIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Repeat(int64_t count) const {
  return Dataset(std::make_shared<RepeatDataset>(base(), count));
}

}  // namespace sluice
