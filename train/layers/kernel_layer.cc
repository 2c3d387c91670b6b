#include "train/layers/kernel_layer.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/layers/parameter_limit.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::layers {

std::vector<autodiff::Variable*> KernelLayer::Variables() {
  std::vector<autodiff::Variable*> vars;
  if (kernel_) vars.push_back(&*kernel_);
  if (bias_) vars.push_back(&*bias_);
  return vars;
}

absl::Status KernelLayer::AddLosses(std::vector<Tensor>& losses) {
  // A frozen kernel's penalty is a constant that no step can lower: Keras 3 adds the penalties of
  // trainable weights only, so the reported loss of a frozen base leaves it out.
  if (!kernel_ || kernel_->frozen() || !config_.kernel_regularizer ||
      !config_.kernel_regularizer->active()) {
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor penalty, config_.kernel_regularizer->Penalty(kernel_->value()));
  losses.push_back(std::move(penalty));
  return absl::OkStatus();
}

absl::Status KernelLayer::CreateVariables(const Shape& kernel_shape, int64_t bias_size) {
  if (bias_size < 0) bias_size = kernel_shape.dim(kernel_shape.rank() - 1);
  const int64_t bias = config_.use_bias ? bias_size : 0;
  SLUICE_RETURN_IF_ERROR(
      ReserveParameters(name(), SaturatingAdd(SaturatingProduct(kernel_shape.dims()), bias)));
  kernel_.emplace(Initialize(config_.kernel_initializer, kernel_shape, config_.seed),
                  absl::StrCat(config_.name, "/kernel"));
  if (config_.use_bias) {
    bias_.emplace(Initialize(config_.bias_initializer, Shape{bias_size}, config_.seed + 1),
                  absl::StrCat(config_.name, "/bias"));
  }
  for (autodiff::Variable* v : Variables()) v->set_frozen(!trainable_flag());
  return absl::OkStatus();
}

absl::StatusOr<Tensor> KernelLayer::Finish(const Tensor& y) {
  Tensor out = y;
  if (bias_) {
    SLUICE_ASSIGN_OR_RETURN(out, ops::Add(out, bias_->value()));  // [units] broadcasts
  }
  return Activate(config_.activation, out);
}

void KernelLayer::AddKernelConfig(LayerConfig& config) const {
  config.ints["use_bias"] = config_.use_bias;
  config.ints["seed"] = static_cast<int64_t>(config_.seed);
  config.strings["kernel_initializer"] = std::string(InitializerName(config_.kernel_initializer));
  config.strings["bias_initializer"] = std::string(InitializerName(config_.bias_initializer));
  config.strings["activation"] = std::string(ActivationName(config_.activation));
  if (config_.kernel_regularizer) {
    config.floats["kernel_regularizer_l1"] = config_.kernel_regularizer->l1;
    config.floats["kernel_regularizer_l2"] = config_.kernel_regularizer->l2;
  }
}

absl::Status KernelLayer::ParseKernelConfig(const LayerConfig& config, Config& out) {
  out.use_bias = config.IntOr("use_bias", 1) != 0;
  out.seed = static_cast<uint64_t>(config.IntOr("seed", 0));
  for (auto [key, field] : {std::pair{"kernel_initializer", &out.kernel_initializer},
                            std::pair{"bias_initializer", &out.bias_initializer}}) {
    if (auto it = config.strings.find(key); it != config.strings.end()) {
      SLUICE_ASSIGN_OR_RETURN(*field, ParseInitializer(it->second));
    }
  }
  if (auto it = config.strings.find("activation"); it != config.strings.end()) {
    SLUICE_ASSIGN_OR_RETURN(out.activation, ParseActivation(it->second));
  }
  auto l1 = config.floats.find("kernel_regularizer_l1");
  auto l2 = config.floats.find("kernel_regularizer_l2");
  if (l1 != config.floats.end() || l2 != config.floats.end()) {
    out.kernel_regularizer =
        Regularizer{.l1 = l1 == config.floats.end() ? 0.0f : static_cast<float>(l1->second),
                    .l2 = l2 == config.floats.end() ? 0.0f : static_cast<float>(l2->second)};
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::layers
