// SampleFromDatasets(datasets, weights, {seed, stop_on_empty_dataset}), as
// tf.data.Dataset.sample_from_datasets: each element comes from input i with probability
// weights[i] over the sum of the weights of the inputs that have not ended.
//
// Draw k is a pure function of the seed and k (a counter-based generator, as Shuffle's), so a
// checkpoint holds the draw counter and the inputs' states, and a restored run draws the same
// inputs. The seed mixes in the repetition's salt: a repeated mix differs from epoch to epoch.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/mixing_iterator.h"

namespace sluice {
namespace {

class SampleFromDatasetsDataset : public DatasetBase {
 public:
  SampleFromDatasetsDataset(std::vector<std::shared_ptr<const DatasetBase>> inputs,
                            std::vector<double> weights, SampleOptions options)
      : DatasetBase("SampleFromDatasets", std::move(inputs)),
        weights_(std::move(weights)),
        options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override {
    return MixedElementSpec(inputs(), inputs().size());
  }
  int64_t Cardinality() const override {
    for (const auto& in : inputs()) {
      if (in->Cardinality() != kInfiniteCardinality) return kUnknownCardinality;
    }
    return inputs().empty() ? 0 : kInfiniteCardinality;
  }
  std::string Describe() const override {
    std::string s =
        absl::StrCat("SampleFromDatasets(weights=[", absl::StrJoin(weights_, ", "), "]");
    if (options_.seed) absl::StrAppend(&s, ", seed=", *options_.seed);
    if (options_.stop_on_empty_dataset) absl::StrAppend(&s, ", stop_on_empty_dataset");
    return s + ")";
  }

  const std::vector<double>& weights() const { return weights_; }
  const SampleOptions& sample_options() const { return options_; }

 private:
  std::vector<double> weights_;
  SampleOptions options_;
};

class SampleFromDatasetsIterator : public MixingIterator {
 public:
  SampleFromDatasetsIterator(const SampleFromDatasetsDataset* d, const IteratorContext& ctx,
                             std::vector<std::unique_ptr<IteratorBase>> inputs)
      : MixingIterator(d, ctx, std::move(inputs)),
        weights_(d->weights()),
        stop_on_empty_(d->sample_options().stop_on_empty_dataset),
        seed_(MixSeed(MixSeed(d->sample_options().seed.value_or(ctx.seed),
                              static_cast<uint64_t>(d->position())),
                      ctx.salt)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (!stopped_) {
      const std::optional<size_t> i = Draw();
      if (!i) break;  // every input left has weight 0, or none is left
      absl::StatusOr<std::optional<Element>> e = NextOf(*i);
      if (!IsEndOfSequence(e)) return e;  // an element, or an error in its place
      if (stop_on_empty_) stopped_ = true;
    }
    return std::nullopt;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["draws"] = draws_;
    ints["stopped"] = stopped_;
    return SaveInputs(state);
  }
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(draws_, SavedInt(state, "draws"));
    SLUICE_ASSIGN_OR_RETURN(int64_t stopped, SavedInt(state, "stopped"));
    stopped_ = stopped != 0;
    return RestoreInputs(state);
  }

 private:
  // An input that has not ended, with probability proportional to its weight; none when the
  // inputs left weigh nothing.
  std::optional<size_t> Draw() {
    double live_total = 0;
    for (size_t i = 0; i < num_inputs(); ++i) live_total += ended(i) ? 0 : weights_[i];
    if (live_total <= 0) return std::nullopt;
    const uint64_t r = MixSeed(seed_, static_cast<uint64_t>(draws_++));
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53 * live_total;  // [0, total)
    double cumulative = 0;
    size_t last_live = 0;
    for (size_t i = 0; i < num_inputs(); ++i) {
      if (ended(i) || weights_[i] == 0) continue;
      last_live = i;
      cumulative += weights_[i];
      if (u < cumulative) return i;
    }
    return last_live;  // rounding at the top end
  }

  const std::vector<double> weights_;
  const bool stop_on_empty_;
  const uint64_t seed_;
  int64_t draws_ = 0;
  bool stopped_ = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> SampleFromDatasetsDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (inputs().empty() || weights_.size() != inputs().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": needs one weight per dataset and at least one dataset, got ",
                     inputs().size(), " datasets and ", weights_.size(), " weights"));
  }
  double total = 0;
  for (double w : weights_) {
    if (!(w >= 0) || !std::isfinite(w)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name(), ": weights must be finite and >= 0, got ", w));
    }
    total += w;
  }
  if (total <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": the weights sum to 0"));
  }
  std::vector<std::unique_ptr<IteratorBase>> its;
  for (size_t i = 0; i < inputs().size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it,
                            inputs()[i]->MakeIterator(ctx.ForInput(name(), i)));
    its.push_back(std::move(it));
  }
  return std::unique_ptr<IteratorBase>(new SampleFromDatasetsIterator(this, ctx, std::move(its)));
}

}  // namespace

Dataset Dataset::SampleFromDatasets(std::vector<Dataset> datasets, std::vector<double> weights,
                                    SampleOptions options) {
  std::vector<std::shared_ptr<const DatasetBase>> inputs;
  inputs.reserve(datasets.size());
  for (Dataset& d : datasets) inputs.push_back(d.base());
  return Dataset(
      std::make_shared<SampleFromDatasetsDataset>(std::move(inputs), std::move(weights), options));
}

}  // namespace sluice
