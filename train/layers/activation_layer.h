#ifndef SLUICE_TRAIN_LAYERS_ACTIVATION_LAYER_H_
#define SLUICE_TRAIN_LAYERS_ACTIVATION_LAYER_H_

#include <string>

#include "train/layers/activation.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

// keras.layers.Activation: one of Keras' activations (activation.h) applied to its input, the
// same op Dense's and Conv2D's `activation=` applies. C++ has the enum `Activation` already, so
// the layer is `ActivationLayer`; its saved config's class is Keras' "Activation", and
// `ActivationLayer(*ParseActivation("sigmoid"))` takes Keras' names. Softmax is over the last
// axis (the channels in NHWC), as Keras' default.
class ActivationLayer : public Module {
 public:
  explicit ActivationLayer(Activation activation) : activation_(activation) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  // Keras names an Activation layer "activation", "activation_1", ...
  std::string name() const override { return "activation"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  Activation activation() const { return activation_; }

 private:
  Activation activation_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_ACTIVATION_LAYER_H_
