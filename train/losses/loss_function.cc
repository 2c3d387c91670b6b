#include "train/losses/loss_function.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/losses/loss_util.h"

namespace sluice::train::losses {

LossFunction::LossFunction(std::string name, LossFn fn, Reduction reduction)
    : Loss(std::move(name), reduction), fn_(std::move(fn)) {}

absl::StatusOr<Tensor> LossFunction::PerExample(const Tensor& y_true, const Tensor& y_pred,
                                                ops::LabelRangeCheck*) const {
  if (!fn_) return absl::FailedPreconditionError(absl::StrCat(name(), ": no loss function"));
  SLUICE_ASSIGN_OR_RETURN(Tensor values, fn_(y_true, y_pred));
  const int64_t batch = y_pred.rank() > 0 ? y_pred.dim(0) : -1;
  if (values.dtype() != DType::kFloat32 || values.rank() < 1 || values.dim(0) != batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": the loss function must return float32 per-example values [N] or [N, ...] with ",
        "y_pred's batch N, got ", DTypeName(values.dtype()), values.shape().DebugString(),
        " for y_pred ", y_pred.shape().DebugString()));
  }
  return internal::MeanOverNonBatch(values);
}

}  // namespace sluice::train::losses
