#ifndef SLUICE_TRAIN_OPTIMIZERS_NADAM_H_
#define SLUICE_TRAIN_OPTIMIZERS_NADAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

// Keras' defaults (TF2 changed the learning rate's to 0.001).
struct NadamOptions {
  float learning_rate = 0.001f;
  float beta_1 = 0.9f;
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;
  // Decoupled weight decay, as Keras 3's weight_decay argument: w -= learning_rate *
  // weight_decay * w before each step.
  float weight_decay = 0.0f;
};

// Keras Nadam (Dozat's Adam with Nesterov momentum and a momentum schedule). At step t,
// u_t = beta_1 (1 - 0.5 * 0.96^t) and P_t = u_1 ... u_t (the "u_product", kept across steps and
// saved with the state):
//   m += (g - m)(1 - beta_1), v += (g^2 - v)(1 - beta_2),
//   m_hat = u_{t+1} m / (1 - P_t u_{t+1}) + (1 - u_t) g / (1 - P_t),
//   w -= lr m_hat / (sqrt(v / (1 - beta_2^t)) + epsilon).
// PyTorch's NAdam has u_t = beta_1 (1 - 0.5 * 0.96^(t * momentum_decay)) with momentum_decay
// 0.004 by default: the same rule only with momentum_decay = 1. Its slots are "momentum" (m) and
// "velocity" (v).
class Nadam : public Optimizer {
 public:
  explicit Nadam(NadamOptions options = {});
  // Keras' Nadam(learning_rate, ...): `learning_rate` replaces options.learning_rate.
  explicit Nadam(float learning_rate, NadamOptions options = {});
  // Keras' Nadam(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Nadam(std::shared_ptr<const LearningRateSchedule> schedule, NadamOptions options = {});

  // P_t after the last step taken (1 before the first).
  double u_product() const { return u_product_; }

 protected:
  void BeginStep(int64_t step) override;
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;
  std::vector<std::pair<std::string, double>> ScalarState() const override;
  absl::Status RestoreScalarState(const std::vector<std::pair<std::string, double>>& scalars,
                                  int64_t iterations) override;

 private:
  // u_t.
  double MomentumAt(int64_t step) const;

  NadamOptions options_;
  double u_product_ = 1;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_NADAM_H_
