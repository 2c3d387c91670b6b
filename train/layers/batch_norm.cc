#include "train/layers/batch_norm.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/layers/parameter_limit.h"
#include "train/ops/activations.h"
#include "train/ops/batch_norm.h"

namespace sluice::train::layers {
namespace {

Tensor Filled(int64_t channels, float value) {
  Tensor t(DType::kFloat32, Shape{channels});
  for (float& x : t.flat<float>()) x = value;
  return t;
}

}  // namespace

BatchNorm::BatchNorm(int64_t channels, BatchNormOptions options) : options_(options) {
  BuildOrDie(*this, Shape{1, channels});
}

absl::Status BatchNorm::Build(const Shape& input_shape) {
  const int64_t channels = input_shape.rank() < 1 ? 0 : input_shape.dim(input_shape.rank() - 1);
  if (gamma_) {
    if (channels != gamma_->shape().dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": built for inputs [..., ",
                                                     gamma_->shape().dim(0), "], got ",
                                                     input_shape.DebugString()));
    }
    return absl::OkStatus();
  }
  if (channels < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": expects inputs [..., channels], got ", input_shape.DebugString()));
  }
  SLUICE_RETURN_IF_ERROR(ReserveParameters(name(), SaturatingProduct({4, channels})));
  gamma_.emplace(Filled(channels, 1), "batch_norm/gamma");
  beta_.emplace(Filled(channels, 0), "batch_norm/beta");
  moving_mean_.emplace(Filled(channels, 0), "batch_norm/moving_mean", /*trainable=*/false);
  moving_variance_.emplace(Filled(channels, 1), "batch_norm/moving_variance",
                           /*trainable=*/false);
  for (autodiff::Variable* v : Variables()) v->set_frozen(!trainable_flag());
  return absl::OkStatus();
}

std::vector<autodiff::Variable*> BatchNorm::Variables() {
  if (!gamma_) return {};
  return {&*gamma_, &*beta_, &*moving_mean_, &*moving_variance_};
}

absl::StatusOr<Tensor> BatchNorm::Forward(const Tensor& input, bool training) {
  return Run(input, training, /*relu=*/false);
}

absl::StatusOr<Tensor> BatchNorm::ForwardRelu(const Tensor& input, bool training) {
  return Run(input, training, /*relu=*/true);
}

absl::StatusOr<Tensor> BatchNorm::Run(const Tensor& input, bool training, bool relu) {
  SLUICE_RETURN_IF_ERROR(BuildFor(input));
  const int64_t channels = gamma_->shape().dim(0);
  if (input.rank() < 1 || input.dim(input.rank() - 1) != channels) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": built for inputs [..., ", channels,
                                                   "], got ", input.shape().DebugString()));
  }
  // Keras: a frozen BatchNorm runs in inference mode.
  if (gamma_->frozen()) training = false;
  if (!training) {
    SLUICE_ASSIGN_OR_RETURN(
        Tensor y,
        ops::BatchNormInference(input, gamma_->value(), beta_->value(), moving_mean_->value(),
                                moving_variance_->value(), options_.epsilon));
    return relu ? ops::Relu(y) : y;
  }
  SLUICE_ASSIGN_OR_RETURN(
      ops::BatchNormTrainingResult result,
      relu ? ops::BatchNormReluTraining(input, gamma_->value(), beta_->value(), options_.epsilon)
           : ops::BatchNormTraining(input, gamma_->value(), beta_->value(), options_.epsilon));
  // In place and unrecorded: the moving statistics are state, not part of the loss.
  // moving = moving * momentum + batch * (1 - momentum), on the variables' device.
  const float momentum = options_.momentum;
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor("BatchNorm", {&result.mean, &moving_mean_->value()}));
  SLUICE_RETURN_IF_ERROR(
      backend->Axpby(1 - momentum, result.mean, momentum, moving_mean_->mutable_value()));
  SLUICE_RETURN_IF_ERROR(
      backend->Axpby(1 - momentum, result.variance, momentum, moving_variance_->mutable_value()));
  return result.output;
}

absl::StatusOr<LayerConfig> BatchNorm::GetConfig() {
  LayerConfig config{.class_name = "BatchNorm",
                     .floats = {{"momentum", options_.momentum}, {"epsilon", options_.epsilon}}};
  if (gamma_) config.ints["channels"] = gamma_->value().num_elements();
  return config;
}

}  // namespace sluice::train::layers
