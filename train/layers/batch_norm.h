#ifndef SLUICE_TRAIN_LAYERS_BATCH_NORM_H_
#define SLUICE_TRAIN_LAYERS_BATCH_NORM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras BatchNormalization's defaults.
struct BatchNormOptions {
  float momentum = 0.99f;
  float epsilon = 1e-3f;
};

// Keras BatchNormalization over the last (channel) axis, with the ops of
// train/batch_norm.h. Training normalises with the batch's statistics and
// moves the moving ones: moving = moving * momentum + batch * (1 - momentum),
// with the biased batch variance, as Keras 3. Inference normalises with the
// moving statistics and changes nothing. gamma (ones) and beta (zeros) are
// trainable; moving_mean (zeros) and moving_variance (ones) are not, and come
// after them in Variables(). A frozen BatchNorm (set_trainable(false)) always runs as in
// inference, as in Keras, so fine-tuning leaves its statistics alone.
class BatchNorm : public Module {
 public:
  // Learns the channel count from its first input (or Build).
  explicit BatchNorm(BatchNormOptions options = {}) : options_(options) {}
  explicit BatchNorm(int64_t channels, BatchNormOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  // Relu(Forward(input, training)), the ReLU fused into the batch norm's pass when training
  // (ops::BatchNormReluTraining), the same bits: what a block that follows its batch norm with a
  // ReLU calls, and Sequential for a BatchNorm and a plain ReLU.
  bool FusesRelu() const override { return true; }
  absl::StatusOr<Tensor> ForwardRelu(const Tensor& input, bool training) override;
  absl::Status Build(const Shape& input_shape) override;
  bool built() override { return gamma_.has_value(); }
  std::string name() const override { return "batch_norm"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  std::vector<autodiff::Variable*> Variables() override;

  // Valid once built.
  autodiff::Variable& gamma() { return *gamma_; }
  autodiff::Variable& beta() { return *beta_; }
  autodiff::Variable& moving_mean() { return *moving_mean_; }
  autodiff::Variable& moving_variance() { return *moving_variance_; }

 private:
  absl::StatusOr<Tensor> Run(const Tensor& input, bool training, bool relu);
  BatchNormOptions options_;
  std::optional<autodiff::Variable> gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_BATCH_NORM_H_
