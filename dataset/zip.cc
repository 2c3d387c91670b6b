// Zip(datasets): tuples of the inputs' elements, their components
// concatenated in input order; ends with the shortest input, like
// tf.data.Dataset.zip.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class ZipDataset : public DatasetBase {
 public:
  explicit ZipDataset(std::vector<std::shared_ptr<const DatasetBase>> inputs)
      : DatasetBase("Zip", std::move(inputs)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    if (inputs().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": needs at least one dataset"));
    }
    std::vector<std::unique_ptr<IteratorBase>> its;
    for (size_t i = 0; i < inputs().size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it,
                              inputs()[i]->MakeIterator(ctx.ForInput(name(), i)));
      its.push_back(std::move(it));
    }
    return std::unique_ptr<IteratorBase>(new ZipIterator(this, ctx, std::move(its)));
  }
  int64_t Cardinality() const override {
    if (inputs().empty()) return 0;
    int64_t n = kInfiniteCardinality;
    for (const auto& in : inputs()) {
      const int64_t c = in->Cardinality();
      if (c == kUnknownCardinality) return kUnknownCardinality;
      if (c == kInfiniteCardinality) continue;
      n = n == kInfiniteCardinality ? c : std::min(n, c);
    }
    return n;
  }
  std::string Describe() const override { return absl::StrCat("Zip(", inputs().size(), ")"); }
  ElementSpec ComputeElementSpec() const override {
    if (inputs().empty()) return ElementSpec();  // MakeIterator refuses it
    std::vector<ElementSpec> parts;
    parts.reserve(inputs().size());
    for (const auto& in : inputs()) parts.push_back(in->element_spec());
    return ElementSpec::Zipped(parts);
  }

 private:
  class ZipIterator : public IteratorBase {
   public:
    ZipIterator(const ZipDataset* d, const IteratorContext& ctx,
                std::vector<std::unique_ptr<IteratorBase>> inputs)
        : IteratorBase(d, ctx, NodeKind::kSync), inputs_(std::move(inputs)) {}

   protected:
    // Every input is advanced once per call, even after one fails, so that
    // an error drops the whole tuple and the inputs stay aligned.
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (ended_) return std::nullopt;
      Element out;
      absl::Status error;
      for (auto& in : inputs_) {
        absl::StatusOr<std::optional<Element>> e = in->GetNext();
        if (!e.ok()) {
          if (error.ok()) error = e.status();
          continue;
        }
        if (!e->has_value()) {
          ended_ = true;
          break;  // The shortest input decides; the others are not advanced.
        }
        for (Tensor& t : **e) out.push_back(std::move(t));
      }
      if (ended_) inputs_.clear();  // Release their resources (open files, threads).
      if (!error.ok()) return error;
      if (ended_) return std::nullopt;
      return out;
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["ended"] = ended_;
      for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(SaveInput(in.get(), state));
      return absl::OkStatus();
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "ended"));
      if (ended != 0) {
        ended_ = true;
        inputs_.clear();
        return absl::OkStatus();
      }
      for (size_t i = 0; i < inputs_.size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in,
                                InputState(state, static_cast<int>(i)));
        if (in == nullptr) {
          return absl::DataLossError(
              absl::StrCat("checkpoint of ", state.node(), " lacks the state of input ", i));
        }
        SLUICE_RETURN_IF_ERROR(inputs_[i]->Restore(*in));
      }
      return absl::OkStatus();
    }

   private:
    std::vector<std::unique_ptr<IteratorBase>> inputs_;
    bool ended_ = false;
  };
};

}  // namespace

Dataset Dataset::Zip(std::vector<Dataset> datasets) {
  std::vector<std::shared_ptr<const DatasetBase>> inputs;
  inputs.reserve(datasets.size());
  for (Dataset& d : datasets) inputs.push_back(d.base());
  return Dataset(std::make_shared<ZipDataset>(std::move(inputs)));
}

Dataset Dataset::Zip(Dataset other) const { return Zip(std::vector<Dataset>{*this, other}); }

}  // namespace sluice
