#include "train/losses/mean_absolute_error.h"

#include <utility>

#include "core/status_macros.h"
#include "train/losses/loss_util.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::losses {

MeanAbsoluteError::MeanAbsoluteError(MeanAbsoluteErrorOptions options)
    : Loss(std::move(options.name), options.reduction) {}

absl::StatusOr<Tensor> MeanAbsoluteError::PerExample(const Tensor& y_true, const Tensor& y_pred,
                                                     ops::LabelRangeCheck*) const {
  SLUICE_RETURN_IF_ERROR(internal::CheckPredictions(name(), y_pred, y_true, 1));
  SLUICE_ASSIGN_OR_RETURN(Tensor target, internal::DenseLabels(name(), y_true, y_pred));
  SLUICE_ASSIGN_OR_RETURN(Tensor error, ops::Sub(y_pred, target));
  SLUICE_ASSIGN_OR_RETURN(Tensor absolute, ops::Abs(error));
  return internal::MeanOverNonBatch(absolute);
}

}  // namespace sluice::train::losses
