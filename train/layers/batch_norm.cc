#include "train/layers/batch_norm.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/ops/batch_norm.h"

namespace sluice::train::layers {
namespace {

Tensor Filled(int64_t channels, float value) {
  Tensor t(DType::kFloat32, Shape{channels});
  for (float& x : t.flat<float>()) x = value;
  return t;
}

}  // namespace

BatchNorm::BatchNorm(int64_t channels, BatchNormOptions options)
    : options_(options),
      gamma_(Filled(channels, 1), "batch_norm/gamma"),
      beta_(Filled(channels, 0), "batch_norm/beta"),
      moving_mean_(Filled(channels, 0), "batch_norm/moving_mean", /*trainable=*/false),
      moving_variance_(Filled(channels, 1), "batch_norm/moving_variance", /*trainable=*/false) {}

absl::StatusOr<Tensor> BatchNorm::Forward(const Tensor& input, bool training) {
  const int64_t channels = gamma_.shape().dim(0);
  if (input.rank() < 1 || input.dim(input.rank() - 1) != channels) {
    return absl::InvalidArgumentError(absl::StrCat("BatchNorm: expected input [..., ", channels,
                                                   "], got ", input.shape().DebugString()));
  }
  if (!training) {
    return ops::BatchNormInference(input, gamma_.value(), beta_.value(), moving_mean_.value(),
                                   moving_variance_.value(), options_.epsilon);
  }
  SLUICE_ASSIGN_OR_RETURN(
      ops::BatchNormTrainingResult result,
      ops::BatchNormTraining(input, gamma_.value(), beta_.value(), options_.epsilon));
  // In place and unrecorded: the moving statistics are state, not part of the loss.
  // moving = moving * momentum + batch * (1 - momentum), on the variables' device.
  const float momentum = options_.momentum;
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor("BatchNorm", {&result.mean, &moving_mean_.value()}));
  SLUICE_RETURN_IF_ERROR(
      backend->Axpby(1 - momentum, result.mean, momentum, moving_mean_.mutable_value()));
  SLUICE_RETURN_IF_ERROR(
      backend->Axpby(1 - momentum, result.variance, momentum, moving_variance_.mutable_value()));
  return result.output;
}

}  // namespace sluice::train::layers
