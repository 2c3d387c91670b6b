// Concatenate(other): this dataset's elements, then the other's, like
// tf.data.Dataset.concatenate. The other's iterator is made when this one
// ends. Its elements must have the components' dtypes of this dataset's
// (taken from its first element; shapes may differ): an element that does
// not is an error naming it, and the next call goes on with the one after.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

std::string DTypesString(const std::vector<DType>& dtypes) {
  return absl::StrCat(
      "(",
      absl::StrJoin(dtypes, ", ",
                    [](std::string* out, DType d) { absl::StrAppend(out, DTypeName(d)); }),
      ")");
}

std::vector<DType> DTypesOf(const Element& e) {
  std::vector<DType> out;
  out.reserve(e.size());
  for (const Tensor& t : e) out.push_back(t.dtype());
  return out;
}

class ConcatenateDataset : public DatasetBase {
 public:
  ConcatenateDataset(std::shared_ptr<const DatasetBase> first,
                     std::shared_ptr<const DatasetBase> second)
      : DatasetBase("Concatenate", {std::move(first), std::move(second)}) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> first, inputs()[0]->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(new ConcatenateIterator(this, ctx, std::move(first)));
  }
  ElementSpec ComputeElementSpec() const override {
    return inputs()[0]->element_spec().MostSpecificCompatibleSpec(inputs()[1]->element_spec());
  }
  int64_t Cardinality() const override {
    const int64_t a = inputs()[0]->Cardinality();
    const int64_t b = inputs()[1]->Cardinality();
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
    if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
    int64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
  }

 private:
  class ConcatenateIterator : public IteratorBase {
   public:
    ConcatenateIterator(const ConcatenateDataset* d, const IteratorContext& ctx,
                        std::unique_ptr<IteratorBase> first)
        : IteratorBase(d, ctx, NodeKind::kSync), d_(d), first_(std::move(first)) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (stage_ == Stage::kFirst) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, first_->GetNext());
        if (e) {
          if (!has_dtypes_) {
            dtypes_ = DTypesOf(*e);
            has_dtypes_ = true;
          }
          return e;
        }
        first_.reset();
        stage_ = Stage::kSecond;
      }
      if (stage_ == Stage::kSecond) {
        if (!second_) {
          absl::StatusOr<std::unique_ptr<IteratorBase>> it =
              d_->inputs()[1]->MakeIterator(ctx().ForInput(d_->name(), 1));
          if (!it.ok()) {
            stage_ = Stage::kEnded;  // Report once; retrying would fail the same way.
            return WithContext(it.status(), "cannot iterate the appended dataset: ");
          }
          second_ = std::move(*it);
        }
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, second_->GetNext());
        if (!e) {
          second_.reset();
          stage_ = Stage::kEnded;
          return std::nullopt;
        }
        const int64_t index = second_index_++;
        if (has_dtypes_) {
          std::vector<DType> got = DTypesOf(*e);
          if (got != dtypes_) {
            return absl::InvalidArgumentError(absl::StrCat(
                "element ", index, " of the appended dataset has components ", DTypesString(got),
                ", expected ", DTypesString(dtypes_), " like the first dataset's elements"));
          }
        }
        return e;
      }
      return std::nullopt;
    }

    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      auto& ints = *state->mutable_ints();
      ints["stage"] = static_cast<int64_t>(stage_);
      ints["second_index"] = second_index_;
      ints["dtypes"] = has_dtypes_ ? static_cast<int64_t>(dtypes_.size()) : -1;
      for (size_t i = 0; i < dtypes_.size(); ++i) {
        ints[absl::StrCat("dtype", i)] = static_cast<int64_t>(dtypes_[i]);
      }
      SLUICE_RETURN_IF_ERROR(SaveInput(first_.get(), state));
      return SaveInput(second_.get(), state);
    }

    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t stage, SavedInt(state, "stage"));
      SLUICE_ASSIGN_OR_RETURN(second_index_, SavedInt(state, "second_index"));
      SLUICE_ASSIGN_OR_RETURN(int64_t n, SavedInt(state, "dtypes"));
      if (stage < 0 || stage > static_cast<int64_t>(Stage::kEnded)) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", state.node(), ": bad stage ", stage));
      }
      stage_ = static_cast<Stage>(stage);
      has_dtypes_ = n >= 0;
      dtypes_.clear();
      for (int64_t i = 0; i < n; ++i) {
        SLUICE_ASSIGN_OR_RETURN(int64_t dt, SavedInt(state, absl::StrCat("dtype", i)));
        if (dt < 0 || dt > static_cast<int64_t>(DType::kBytes)) {
          return absl::DataLossError(
              absl::StrCat("checkpoint of ", state.node(), ": bad dtype ", dt));
        }
        dtypes_.push_back(static_cast<DType>(dt));
      }
      SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* first, InputState(state, 0));
      SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* second, InputState(state, 1));
      // The first input is saved exactly while it is being read: any other pairing would leave
      // GetNext without the iterator it needs.
      if ((stage_ == Stage::kFirst) != (first != nullptr)) {
        return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), ": stage ", stage,
                                                first != nullptr ? " with" : " without",
                                                " the first input's state"));
      }
      if (first != nullptr) {
        SLUICE_RETURN_IF_ERROR(first_->Restore(*first));
      } else {
        first_.reset();
      }
      if (second != nullptr) {
        SLUICE_ASSIGN_OR_RETURN(second_,
                                d_->inputs()[1]->MakeIterator(ctx().ForInput(d_->name(), 1)));
        SLUICE_RETURN_IF_ERROR(second_->Restore(*second));
      }
      return absl::OkStatus();
    }

   private:
    enum class Stage { kFirst = 0, kSecond = 1, kEnded = 2 };

    const ConcatenateDataset* d_;
    std::unique_ptr<IteratorBase> first_;   // until it ends
    std::unique_ptr<IteratorBase> second_;  // made when the first ends
    Stage stage_ = Stage::kFirst;
    bool has_dtypes_ = false;
    std::vector<DType> dtypes_;  // of the first dataset's first element
    int64_t second_index_ = 0;   // elements read from the second dataset
  };
};

}  // namespace

Dataset Dataset::Concatenate(Dataset other) const {
  return Dataset(std::make_shared<ConcatenateDataset>(base(), other.base()));
}

}  // namespace sluice
