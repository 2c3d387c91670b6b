#include "train/layers/dense.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/ops/activations.h"
#include "train/ops/matmul.h"
#include "train/ops/matmul_bias.h"

namespace sluice::train::layers {
namespace {

DenseOptions WithActivation(DenseOptions options, Activation activation) {
  if (activation != Activation::kLinear) options.activation = activation;
  return options;
}

}  // namespace

Dense::Dense(int64_t units, Activation activation, DenseOptions options)
    : KernelLayer(ConfigOf("dense", WithActivation(options, activation))), units_(units) {}

Dense::Dense(int64_t in_features, int64_t units, DenseOptions options)
    : KernelLayer(ConfigOf("dense", options)), units_(units) {
  BuildOrDie(*this, Shape{1, in_features});
}

absl::Status Dense::Build(const Shape& input_shape) {
  if (units_ < 1) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": units must be >= 1, got ", units_));
  }
  const int64_t in = input_shape.rank() == 0 ? 0 : input_shape.dim(input_shape.rank() - 1);
  if (in_features_) {
    if (in != *in_features_) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": built for inputs [..., ",
                                                     *in_features_, "], got ",
                                                     input_shape.DebugString()));
    }
    return absl::OkStatus();
  }
  // Forward multiplies [batch, features] only: a higher rank (a missing Flatten after a Conv2D)
  // is refused here, before a kernel over its last axis is made.
  if (input_shape.rank() != 2 || in < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": expects inputs [batch, features], got ", input_shape.DebugString(),
                     input_shape.rank() > 2 ? "; add Flatten() or GlobalAvgPool() before it" : ""));
  }
  SLUICE_RETURN_IF_ERROR(CreateVariables(Shape{in, units_}));
  in_features_ = in;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Dense::Forward(const Tensor& input, bool) { return Run(input, false); }

bool Dense::FusesRelu() const { return activation() == Activation::kLinear && use_bias(); }

absl::StatusOr<Tensor> Dense::ForwardRelu(const Tensor& input, bool) { return Run(input, true); }

absl::StatusOr<Tensor> Dense::Run(const Tensor& input, bool relu) {
  if (!built()) {
    SLUICE_RETURN_IF_ERROR(BuildFor(input));
  } else if (input.rank() != 2 || input.dim(1) != *in_features_) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": built for inputs [batch, ",
                                                   *in_features_, "], got ",
                                                   input.shape().DebugString()));
  }
  // The bias and a ReLU inside the matmul's kernel (relu twice is relu once).
  if (bias() && (activation() == Activation::kLinear || activation() == Activation::kRelu)) {
    return ops::MatMulBias(input, kernel().value(), bias()->value(),
                           relu || activation() == Activation::kRelu);
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::MatMul(input, kernel().value()));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Finish(y));
  if (!relu) return out;
  return ops::Relu(out);
}

absl::StatusOr<LayerConfig> Dense::GetConfig() {
  LayerConfig config{.class_name = "Dense", .ints = {{"units", units_}}};
  if (in_features_) config.ints["in_features"] = *in_features_;
  AddKernelConfig(config);
  return config;
}

}  // namespace sluice::train::layers
