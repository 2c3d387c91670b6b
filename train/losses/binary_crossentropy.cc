#include "train/losses/binary_crossentropy.h"

#include <utility>

#include "core/status_macros.h"
#include "train/losses/loss_util.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/scalar.h"

namespace sluice::train::losses {

BinaryCrossentropy::BinaryCrossentropy(BinaryCrossentropyOptions options)
    : Loss(std::move(options.name), options.reduction),
      from_logits_(options.from_logits),
      label_smoothing_(options.label_smoothing) {}

absl::StatusOr<Tensor> BinaryCrossentropy::PerExample(const Tensor& y_true, const Tensor& y_pred,
                                                      ops::LabelRangeCheck*) const {
  SLUICE_RETURN_IF_ERROR(internal::CheckPredictions(name(), y_pred, y_true, 1));
  SLUICE_RETURN_IF_ERROR(internal::CheckLabelSmoothing(name(), label_smoothing_));
  SLUICE_ASSIGN_OR_RETURN(Tensor z, internal::DenseLabels(name(), y_true, y_pred));
  if (label_smoothing_ > 0) {
    SLUICE_ASSIGN_OR_RETURN(z, ops::Scale(z, 1.0f - label_smoothing_));
    SLUICE_ASSIGN_OR_RETURN(z, ops::AddScalar(z, 0.5f * label_smoothing_));
  }
  Tensor loss;
  if (from_logits_) {
    SLUICE_ASSIGN_OR_RETURN(Tensor softplus, ops::Softplus(y_pred));
    SLUICE_ASSIGN_OR_RETURN(Tensor xz, ops::Mul(y_pred, z));
    SLUICE_ASSIGN_OR_RETURN(loss, ops::Sub(softplus, xz));
  } else {
    SLUICE_ASSIGN_OR_RETURN(Tensor p,
                            internal::Clip(y_pred, internal::kEpsilon, 1.0f - internal::kEpsilon));
    SLUICE_ASSIGN_OR_RETURN(Tensor log_p, ops::Log(p));
    SLUICE_ASSIGN_OR_RETURN(Tensor one_minus_p, ops::Scale(p, -1.0f));
    SLUICE_ASSIGN_OR_RETURN(one_minus_p, ops::AddScalar(one_minus_p, 1.0f));
    SLUICE_ASSIGN_OR_RETURN(Tensor log_q, ops::Log(one_minus_p));
    // -(z log p + (1 - z) log q) = z (log q - log p) - log q
    SLUICE_ASSIGN_OR_RETURN(Tensor diff, ops::Sub(log_q, log_p));
    SLUICE_ASSIGN_OR_RETURN(Tensor weighted, ops::Mul(z, diff));
    SLUICE_ASSIGN_OR_RETURN(loss, ops::Sub(weighted, log_q));
  }
  return internal::MeanOverNonBatch(loss);
}

}  // namespace sluice::train::losses
