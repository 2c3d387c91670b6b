#ifndef SLUICE_TRAIN_LAYERS_KERNEL_LAYER_H_
#define SLUICE_TRAIN_LAYERS_KERNEL_LAYER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/layers/activation.h"
#include "train/layers/initializers.h"
#include "train/layers/layer_seed.h"
#include "train/layers/module.h"
#include "train/layers/regularizer.h"

namespace sluice::train::layers {

// What Dense, Conv2D and DepthwiseConv2D share: a kernel, an optional bias, an activation and a
// kernel regulariser, built when the input size is known (Keras' build()).
class KernelLayer : public Module {
 public:
  struct Config {
    std::string name;  // "dense": variables are "<name>/kernel" and "<name>/bias"
    bool use_bias = true;
    Initializer kernel_initializer = Initializer::kGlorotUniform;
    Initializer bias_initializer = Initializer::kZeros;
    uint64_t seed = 0;  // the kernel's; the bias uses seed + 1
    Activation activation = Activation::kLinear;
    std::optional<Regularizer> kernel_regularizer;
  };

  // The Config of a layer's options (DenseOptions and Conv2DLayerOptions share these fields).
  template <typename Options>
  static Config ConfigOf(std::string name, const Options& options) {
    return {.name = std::move(name),
            .use_bias = options.use_bias,
            .kernel_initializer = options.kernel_initializer,
            .bias_initializer = options.bias_initializer,
            .seed = ResolveLayerSeed(options.seed),
            .activation = options.activation,
            .kernel_regularizer = options.kernel_regularizer};
  }

  std::string name() const override { return config_.name; }
  std::vector<autodiff::Variable*> Variables() override;
  bool built() override { return kernel_.has_value(); }
  absl::Status AddLosses(std::vector<Tensor>& losses) override;

  // Valid once built.
  autodiff::Variable& kernel() { return *kernel_; }
  autodiff::Variable* bias() { return bias_ ? &*bias_ : nullptr; }
  Activation activation() const { return config_.activation; }
  bool use_bias() const { return config_.use_bias; }
  // Adds the shared fields (use_bias, initializers, seed, activation, kernel_regularizer) to a
  // saved config, and reads them back into Options (DenseOptions or Conv2DLayerOptions).
  void AddKernelConfig(LayerConfig& config) const;
  template <typename Options>
  static absl::Status ReadKernelConfig(const LayerConfig& config, Options& options) {
    Config c;
    absl::Status s = ParseKernelConfig(config, c);
    if (!s.ok()) return s;
    options.use_bias = c.use_bias;
    options.kernel_initializer = c.kernel_initializer;
    options.bias_initializer = c.bias_initializer;
    options.seed = c.seed;
    options.activation = c.activation;
    options.kernel_regularizer = c.kernel_regularizer;
    return absl::OkStatus();
  }

 protected:
  explicit KernelLayer(Config config) : config_(std::move(config)) {}
  // Creates the kernel of `kernel_shape` and a bias of `bias_size` (-1: the kernel's last
  // dimension; DepthwiseConv2D's is channels x depth_multiplier) on the CPU, frozen when the
  // layer is. Called once, by Build; fails, allocating nothing, over the thread's
  // ParameterLimit.
  absl::Status CreateVariables(const Shape& kernel_shape, int64_t bias_size = -1);
  static absl::Status ParseKernelConfig(const LayerConfig& config, Config& out);
  // y + bias, then the activation.
  absl::StatusOr<Tensor> Finish(const Tensor& y);

 private:
  Config config_;
  std::optional<autodiff::Variable> kernel_;
  std::optional<autodiff::Variable> bias_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_KERNEL_LAYER_H_
