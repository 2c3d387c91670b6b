#include "train/losses/huber.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/losses/loss_util.h"
#include "train/ops/arithmetic.h"
#include "train/ops/scalar.h"

namespace sluice::train::losses {

Huber::Huber(HuberOptions options)
    : Loss(std::move(options.name), options.reduction), delta_(options.delta) {}

absl::StatusOr<Tensor> Huber::PerExample(const Tensor& y_true, const Tensor& y_pred,
                                         ops::LabelRangeCheck*) const {
  SLUICE_RETURN_IF_ERROR(internal::CheckPredictions(name(), y_pred, y_true, 1));
  if (!(delta_ > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": delta must be > 0, got ", delta_));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor target, internal::DenseLabels(name(), y_true, y_pred));
  SLUICE_ASSIGN_OR_RETURN(Tensor error, ops::Sub(y_pred, target));
  SLUICE_ASSIGN_OR_RETURN(Tensor a, ops::Abs(error));
  // With q = min(|e|, delta): 0.5 q^2 + delta (|e| - q) is 0.5 e^2 inside and
  // delta |e| - 0.5 delta^2 outside, one expression with no branch per element.
  SLUICE_ASSIGN_OR_RETURN(Tensor delta, ops::ScalarLike(delta_, y_pred));
  SLUICE_ASSIGN_OR_RETURN(Tensor q, ops::Minimum(a, delta));
  SLUICE_ASSIGN_OR_RETURN(Tensor q2, ops::Square(q));
  SLUICE_ASSIGN_OR_RETURN(Tensor quadratic, ops::Scale(q2, 0.5f));
  SLUICE_ASSIGN_OR_RETURN(Tensor excess, ops::Sub(a, q));
  SLUICE_ASSIGN_OR_RETURN(Tensor linear, ops::Mul(excess, delta));
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Add(quadratic, linear));
  return internal::MeanOverNonBatch(loss);
}

}  // namespace sluice::train::losses
