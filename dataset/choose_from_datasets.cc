// ChooseFromDatasets(datasets, choice, {stop_on_empty_dataset}), as
// tf.data.Dataset.choose_from_datasets: element k comes from input choice[k], where `choice`
// yields int64 scalars in [0, datasets.size()). It ends with `choice`, or (by default) at the
// first choice of an input that has ended; with stop_on_empty_dataset = false such a choice is
// skipped. A bad choice is an error naming its index and value.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/mixing_iterator.h"

namespace sluice {
namespace {

class ChooseFromDatasetsDataset : public DatasetBase {
 public:
  // `inputs`: the datasets, then the choice dataset last.
  ChooseFromDatasetsDataset(std::vector<std::shared_ptr<const DatasetBase>> inputs,
                            ChooseOptions options)
      : DatasetBase("ChooseFromDatasets", std::move(inputs)), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override {
    return MixedElementSpec(inputs(), inputs().size() - 1);
  }
  int64_t Cardinality() const override {
    const int64_t choices = inputs().back()->Cardinality();
    if (choices == 0) return 0;
    for (size_t i = 0; i + 1 < inputs().size(); ++i) {
      if (inputs()[i]->Cardinality() != kInfiniteCardinality) return kUnknownCardinality;
    }
    // Every input is infinite: one element per choice.
    return choices;
  }
  std::string Describe() const override {
    return absl::StrCat("ChooseFromDatasets(", inputs().size() - 1,
                        options_.stop_on_empty_dataset ? "" : ", stop_on_empty_dataset=false", ")");
  }

  const ChooseOptions& choose_options() const { return options_; }

 private:
  ChooseOptions options_;
};

class ChooseFromDatasetsIterator : public MixingIterator {
 public:
  ChooseFromDatasetsIterator(const ChooseFromDatasetsDataset* d, const IteratorContext& ctx,
                             std::vector<std::unique_ptr<IteratorBase>> inputs,
                             std::unique_ptr<IteratorBase> choice)
      : MixingIterator(d, ctx, std::move(inputs)),
        choice_(std::move(choice)),
        stop_on_empty_(d->choose_options().stop_on_empty_dataset) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (!stopped_) {
      absl::StatusOr<std::optional<Element>> c = choice_->GetNext();
      if (!c.ok()) return c.status();
      if (!c->has_value()) {
        stopped_ = true;
        break;
      }
      const int64_t k = choices_++;
      const Element& e = **c;
      if (e.size() != 1 || e[0].dtype() != DType::kInt64 || e[0].rank() != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("choice ", k, " must be an int64 scalar, got ", ElementDebugString(e, 2)));
      }
      const int64_t i = e[0].scalar<int64_t>();
      if (i < 0 || i >= static_cast<int64_t>(num_inputs())) {
        return absl::InvalidArgumentError(
            absl::StrCat("choice ", k, " is ", i, ", outside [0, ", num_inputs(), ")"));
      }
      if (!ended(static_cast<size_t>(i))) {
        absl::StatusOr<std::optional<Element>> next = NextOf(static_cast<size_t>(i));
        if (!IsEndOfSequence(next)) return next;  // an element, or an error in its place
      }
      if (stop_on_empty_) stopped_ = true;
    }
    return std::nullopt;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["choices"] = choices_;
    ints["stopped"] = stopped_;
    SLUICE_RETURN_IF_ERROR(SaveInputs(state));
    return SaveInput(choice_.get(), state);  // input n
  }
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(choices_, SavedInt(state, "choices"));
    SLUICE_ASSIGN_OR_RETURN(int64_t stopped, SavedInt(state, "stopped"));
    stopped_ = stopped != 0;
    SLUICE_RETURN_IF_ERROR(RestoreInputs(state));
    return RestoreInput(choice_.get(), state, static_cast<int>(num_inputs()));
  }

 private:
  std::unique_ptr<IteratorBase> choice_;
  const bool stop_on_empty_;
  int64_t choices_ = 0;  // read from `choice` so far, for error messages
  bool stopped_ = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> ChooseFromDatasetsDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (inputs().size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": needs at least one dataset"));
  }
  std::vector<std::unique_ptr<IteratorBase>> its;
  for (size_t i = 0; i + 1 < inputs().size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it,
                            inputs()[i]->MakeIterator(ctx.ForInput(name(), i)));
    its.push_back(std::move(it));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> choice,
                          inputs().back()->MakeIterator(ctx.ForInput(name(), inputs().size() - 1)));
  return std::unique_ptr<IteratorBase>(
      new ChooseFromDatasetsIterator(this, ctx, std::move(its), std::move(choice)));
}

}  // namespace

Dataset Dataset::ChooseFromDatasets(std::vector<Dataset> datasets, Dataset choice,
                                    ChooseOptions options) {
  std::vector<std::shared_ptr<const DatasetBase>> inputs;
  inputs.reserve(datasets.size() + 1);
  for (Dataset& d : datasets) inputs.push_back(d.base());
  inputs.push_back(choice.base());
  return Dataset(std::make_shared<ChooseFromDatasetsDataset>(std::move(inputs), options));
}

}  // namespace sluice
