#include "train/losses/mean_squared_error.h"

#include <utility>

#include "core/status_macros.h"
#include "train/losses/loss_util.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::losses {

MeanSquaredError::MeanSquaredError(MeanSquaredErrorOptions options)
    : Loss(std::move(options.name), options.reduction) {}

absl::StatusOr<Tensor> MeanSquaredError::PerExample(const Tensor& y_true, const Tensor& y_pred,
                                                    ops::LabelRangeCheck*) const {
  SLUICE_RETURN_IF_ERROR(internal::CheckPredictions(name(), y_pred, y_true, 1));
  SLUICE_ASSIGN_OR_RETURN(Tensor target, internal::DenseLabels(name(), y_true, y_pred));
  SLUICE_ASSIGN_OR_RETURN(Tensor error, ops::Sub(y_pred, target));
  SLUICE_ASSIGN_OR_RETURN(Tensor squared, ops::Square(error));
  return internal::MeanOverNonBatch(squared);
}

}  // namespace sluice::train::losses
