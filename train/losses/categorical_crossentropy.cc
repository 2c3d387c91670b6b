#include "train/losses/categorical_crossentropy.h"

#include <utility>

#include "core/status_macros.h"
#include "train/losses/loss_util.h"
#include "train/ops/arithmetic.h"
#include "train/ops/reduce.h"
#include "train/ops/scalar.h"

namespace sluice::train::losses {

CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions options)
    : Loss(std::move(options.name), options.reduction),
      from_logits_(options.from_logits),
      label_smoothing_(options.label_smoothing) {}

absl::StatusOr<Tensor> CategoricalCrossentropy::PerExample(const Tensor& y_true,
                                                           const Tensor& y_pred,
                                                           ops::LabelRangeCheck*) const {
  SLUICE_RETURN_IF_ERROR(internal::CheckPredictions(name(), y_pred, y_true, 2));
  const int64_t classes = y_pred.dim(y_pred.rank() - 1);
  SLUICE_RETURN_IF_ERROR(internal::CheckSeveralClasses(name(), y_true, y_pred));
  if (y_true.shape() != y_pred.shape()) {
    return internal::LabelError(name(),
                                "y_true must be one-hot (a distribution over the classes) of "
                                "y_pred's shape; class indices take SparseCategoricalCrossentropy",
                                y_true, y_pred);
  }
  SLUICE_RETURN_IF_ERROR(internal::CheckLabelSmoothing(name(), label_smoothing_));
  SLUICE_ASSIGN_OR_RETURN(Tensor target, internal::DenseLabels(name(), y_true, y_pred));
  if (label_smoothing_ > 0) {
    SLUICE_ASSIGN_OR_RETURN(target, ops::Scale(target, 1.0f - label_smoothing_));
    SLUICE_ASSIGN_OR_RETURN(target,
                            ops::AddScalar(target, label_smoothing_ / static_cast<float>(classes)));
  }
  Tensor log_p;
  if (from_logits_) {
    SLUICE_ASSIGN_OR_RETURN(log_p, internal::LogSoftmax(y_pred));
  } else {
    SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(y_pred, {-1}, /*keepdims=*/true));
    SLUICE_ASSIGN_OR_RETURN(Tensor p, ops::Div(y_pred, sum));
    SLUICE_ASSIGN_OR_RETURN(p, internal::Clip(p, internal::kEpsilon, 1.0f - internal::kEpsilon));
    SLUICE_ASSIGN_OR_RETURN(log_p, ops::Log(p));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor product, ops::Mul(target, log_p));
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(product, {-1}));
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Scale(sum, -1.0f));
  return internal::MeanOverNonBatch(loss);
}

}  // namespace sluice::train::losses
