#ifndef SLUICE_TRAIN_LAYERS_RELU_H_
#define SLUICE_TRAIN_LAYERS_RELU_H_

#include <optional>
#include <string>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras ReLU's arguments and defaults; each must be >= 0 (Keras refuses a negative one, and so
// does Forward and the loader).
struct ReLUOptions {
  // Unset: no upper bound. 6 gives ReLU6 (MobileNet's).
  std::optional<float> max_value;
  // The slope below the threshold (a leaky ReLU).
  float negative_slope = 0;
  // Where the line starts: x counts as positive only above it.
  float threshold = 0;
};

// keras.layers.ReLU: f(x) = max_value for x >= max_value, x for threshold <= x < max_value,
// negative_slope * (x - threshold) below the threshold. The defaults give max(x, 0). Composed of
// ops with gradients (relu, minimum, greater, multiply) as Keras' own relu is.
class ReLU : public Module {
 public:
  ReLU() = default;
  explicit ReLU(ReLUOptions options) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "relu"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const ReLUOptions& options() const { return options_; }

 private:
  ReLUOptions options_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_RELU_H_
