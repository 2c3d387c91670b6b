#ifndef SLUICE_TRAIN_LAYERS_BATCH_NORM_H_
#define SLUICE_TRAIN_LAYERS_BATCH_NORM_H_

#include <cstdint>

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
// after them in Variables().
class BatchNorm : public Module {
 public:
  explicit BatchNorm(int64_t channels, BatchNormOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::vector<autodiff::Variable*> TrainableVariables() override { return {&gamma_, &beta_}; }
  std::vector<autodiff::Variable*> Variables() override {
    return {&gamma_, &beta_, &moving_mean_, &moving_variance_};
  }

  autodiff::Variable& gamma() { return gamma_; }
  autodiff::Variable& beta() { return beta_; }
  autodiff::Variable& moving_mean() { return moving_mean_; }
  autodiff::Variable& moving_variance() { return moving_variance_; }

 private:
  BatchNormOptions options_;
  autodiff::Variable gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_BATCH_NORM_H_
