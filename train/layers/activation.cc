#include "train/layers/activation.h"

#include "absl/strings/str_cat.h"
#include "train/ops/activations.h"
#include "train/ops/softmax.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> Activate(Activation activation, const Tensor& x) {
  switch (activation) {
    case Activation::kLinear:
      return x;
    case Activation::kRelu:
      return ops::Relu(x);
    case Activation::kSigmoid:
      return ops::Sigmoid(x);
    case Activation::kTanh:
      return ops::Tanh(x);
    case Activation::kGelu:
      return ops::Gelu(x);
    case Activation::kSoftmax:
      return ops::Softmax(x);
  }
  return absl::InternalError("unknown activation");
}

absl::string_view ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kLinear:
      return "linear";
    case Activation::kRelu:
      return "relu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
    case Activation::kGelu:
      return "gelu";
    case Activation::kSoftmax:
      return "softmax";
  }
  return "?";
}

absl::StatusOr<Activation> ParseActivation(absl::string_view name) {
  if (name.empty()) return Activation::kLinear;
  for (Activation a : {Activation::kLinear, Activation::kRelu, Activation::kSigmoid,
                       Activation::kTanh, Activation::kGelu, Activation::kSoftmax}) {
    if (ActivationName(a) == name) return a;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown activation '", name, "': want linear, relu, sigmoid, tanh, gelu or softmax"));
}

}  // namespace sluice::train::layers
