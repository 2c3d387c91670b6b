#include "dataset/interleave.h"

#include <functional>
#include <string>
#include <utility>

#include "dataset/parallel_interleave_iterator.h"
#include "dataset/sequential_interleave_iterator.h"

namespace sluice {
namespace internal {

absl::StatusOr<std::unique_ptr<IteratorBase>> InterleaveDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_RETURN_IF_ERROR(CheckKnob(name(), "cycle_length", options_.cycle_length));
  if (options_.block_length < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": block_length must be >= 1, got ", options_.block_length));
  }
  SLUICE_RETURN_IF_ERROR(CheckKnob(name(), "num_parallel_calls", options_.num_parallel_calls));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  if (options_.num_parallel_calls == 1) {
    return MakeSequentialInterleaveIterator(this, ctx, std::move(input));
  }
  return MakeParallelInterleaveIterator(this, ctx, std::move(input));
}

}  // namespace internal

Dataset Dataset::Interleave(DatasetFn fn, InterleaveOptions options) const {
  return Dataset(std::make_shared<internal::InterleaveDataset>(base(), std::move(fn), options));
}

Dataset Dataset::Interleave(std::function<Dataset(const std::string&)> fn,
                            InterleaveOptions options) const {
  DatasetFn by_element = [fn = std::move(fn)](Element e) -> absl::StatusOr<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kBytes || e[0].num_elements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("Interleave by name expects a scalar bytes element (a file name), got ",
                       ElementDebugString(e)));
    }
    return fn(e[0].flat<std::string>()[0]);
  };
  return Interleave(std::move(by_element), options);
}

}  // namespace sluice
