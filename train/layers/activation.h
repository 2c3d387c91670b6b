#ifndef SLUICE_TRAIN_LAYERS_ACTIVATION_H_
#define SLUICE_TRAIN_LAYERS_ACTIVATION_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::layers {

// Keras' `activation=` argument of Dense and Conv2D.
enum class Activation { kLinear, kRelu, kSigmoid, kTanh, kGelu, kSoftmax };

// The op for `activation` applied to `x` (kLinear returns x itself).
absl::StatusOr<Tensor> Activate(Activation activation, const Tensor& x);
// Keras' names: "linear", "relu", "sigmoid", "tanh", "gelu", "softmax".
absl::string_view ActivationName(Activation activation);
// The inverse of ActivationName ("" is linear, as Keras' activation=None); InvalidArgument
// listing the names otherwise.
absl::StatusOr<Activation> ParseActivation(absl::string_view name);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_ACTIVATION_H_
