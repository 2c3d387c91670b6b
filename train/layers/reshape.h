#ifndef SLUICE_TRAIN_LAYERS_RESHAPE_H_
#define SLUICE_TRAIN_LAYERS_RESHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras Reshape: each example's values in `target_shape` (the batch dimension kept, not part of
// it). One entry may be -1, inferred from the others; every other entry is >= 1, and the
// element counts must agree, else Forward fails naming both shapes.
class Reshape : public Module {
 public:
  explicit Reshape(std::vector<int64_t> target_shape) : target_shape_(std::move(target_shape)) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "reshape"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const std::vector<int64_t>& target_shape() const { return target_shape_; }

  // The output shape for an input of `input_shape` (batch first): what Forward makes, and what
  // the loader checks a saved Reshape against before it makes anything.
  static absl::StatusOr<Shape> OutputShape(const std::vector<int64_t>& target_shape,
                                           const Shape& input_shape);

 private:
  std::vector<int64_t> target_shape_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_RESHAPE_H_
