#ifndef SLUICE_TRAIN_LAYERS_DENSE_H_
#define SLUICE_TRAIN_LAYERS_DENSE_H_

#include <cstdint>
#include <optional>

#include "train/layers/kernel_layer.h"

namespace sluice::train::layers {

struct DenseOptions {
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::kGlorotUniform;
  Initializer bias_initializer = Initializer::kZeros;
  std::optional<uint64_t> seed;  // unset: the next of layer_seed.h's sequence
  Activation activation = Activation::kLinear;
  std::optional<Regularizer> kernel_regularizer;  // Keras' kernel_regularizer
};

// keras.layers.Dense: y = activation(x kernel + bias), x [N, in], kernel [in, units], bias
// [units]. Dense(units) learns `in` from its first input (or Build); Dense(in, units) builds at
// once. Both give the same values for the same seed.
class Dense : public KernelLayer {
 public:
  explicit Dense(int64_t units, Activation activation = Activation::kLinear,
                 DenseOptions options = {});
  // Dense(10, {.activation = Activation::kSoftmax, .seed = 1}), as Conv2D takes its options.
  Dense(int64_t units, DenseOptions options) : Dense(units, Activation::kLinear, options) {}
  Dense(int64_t in_features, int64_t units, DenseOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  // With a bias and a linear activation, in one kernel (ops::MatMulBias).
  bool FusesRelu() const override;
  absl::StatusOr<Tensor> ForwardRelu(const Tensor& input, bool training) override;
  absl::Status Build(const Shape& input_shape) override;
  absl::StatusOr<LayerConfig> GetConfig() override;
  int64_t units() const { return units_; }

 private:
  absl::StatusOr<Tensor> Run(const Tensor& input, bool relu);

  int64_t units_;
  std::optional<int64_t> in_features_;  // set once built
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_DENSE_H_
