#include "train/fit/gradient_accumulation_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::fit {

absl::Status GradientAccumulationStrategy::ApplyGradients(
    std::vector<std::optional<Tensor>> grads, const std::vector<autodiff::Variable*>& vars) {
  SLUICE_RETURN_IF_ERROR(accumulator_.Add(grads));
  ++accumulated_;
  if (!accumulator_.ready()) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> mean, accumulator_.Average());
  SLUICE_RETURN_IF_ERROR(inner().ApplyGradients(std::move(mean), vars));
  accumulated_ = 0;
  return absl::OkStatus();
}

absl::Status GradientAccumulationStrategy::CheckCanSave(const std::string& path,
                                                        int64_t global_step) const {
  if (accumulated_ != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot checkpoint at step ", global_step, ": ", accumulated_, " of ",
        accumulator_.steps(), " accumulated gradients are not applied yet (save every ",
        accumulator_.steps(), " steps)"));
  }
  return WrappingStrategy::CheckCanSave(path, global_step);
}

}  // namespace sluice::train::fit
