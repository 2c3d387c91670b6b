#ifndef SLUICE_TRAIN_OPTIMIZERS_LEARNING_RATE_SCHEDULE_H_
#define SLUICE_TRAIN_OPTIMIZERS_LEARNING_RATE_SCHEDULE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::train::optimizers {

// A learning rate as a function of the optimizer's step (its iterations()
// before the update, counting from 0), as keras.optimizers.schedules.
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual float operator()(int64_t step) const = 0;
};

// Keras ExponentialDecay: initial * decay_rate^(step / decay_steps). With
// `staircase` the exponent is floored, which is what "step decay" means to a
// Keras user: the rate drops by `decay_rate` every `decay_steps` steps.
struct ExponentialDecayOptions {
  double initial_learning_rate = 0.01;
  int64_t decay_steps = 1000;  // > 0
  double decay_rate = 0.1;
  bool staircase = false;
};
class ExponentialDecay : public LearningRateSchedule {
 public:
  explicit ExponentialDecay(ExponentialDecayOptions options) : options_(options) {}
  float operator()(int64_t step) const override;

 private:
  ExponentialDecayOptions options_;
};

// Step decay: ExponentialDecay with staircase, as above.
std::shared_ptr<const LearningRateSchedule> StepDecay(double initial_learning_rate,
                                                      int64_t decay_steps, double decay_rate);

// Keras PiecewiseConstantDecay: values[0] while step <= boundaries[0],
// values[i] while boundaries[i-1] < step <= boundaries[i], values.back() after
// the last boundary. Needs values.size() == boundaries.size() + 1 and
// increasing boundaries.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  static absl::StatusOr<std::shared_ptr<const PiecewiseConstantDecay>> Create(
      std::vector<int64_t> boundaries, std::vector<float> values);
  float operator()(int64_t step) const override;

 private:
  PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<float> values)
      : boundaries_(std::move(boundaries)), values_(std::move(values)) {}
  std::vector<int64_t> boundaries_;
  std::vector<float> values_;
};

// Keras CosineDecay without warmup: initial * ((1 - alpha) * 0.5 * (1 +
// cos(pi * min(step, decay_steps) / decay_steps)) + alpha); after decay_steps
// it stays at initial * alpha. Wrap it in LinearWarmup for Keras' warmup.
struct CosineDecayOptions {
  double initial_learning_rate = 0.01;
  int64_t decay_steps = 1000;  // > 0
  double alpha = 0.0;          // the final rate as a fraction of the initial one
};
class CosineDecay : public LearningRateSchedule {
 public:
  explicit CosineDecay(CosineDecayOptions options) : options_(options) {}
  float operator()(int64_t step) const override;

 private:
  CosineDecayOptions options_;
};

// Linear warmup in front of any schedule: from `initial_learning_rate` at
// step 0 up towards after(0) over `warmup_steps` steps, then after(step -
// warmup_steps). LinearWarmup(CosineDecay({.initial_learning_rate = target,
// ...}), n, start) is Keras' CosineDecay(start, ..., warmup_target = target,
// warmup_steps = n).
class LinearWarmup : public LearningRateSchedule {
 public:
  LinearWarmup(std::shared_ptr<const LearningRateSchedule> after, int64_t warmup_steps,
               double initial_learning_rate = 0.0)
      : after_(std::move(after)),
        warmup_steps_(warmup_steps),
        initial_learning_rate_(initial_learning_rate) {}
  float operator()(int64_t step) const override;

 private:
  std::shared_ptr<const LearningRateSchedule> after_;
  int64_t warmup_steps_;
  double initial_learning_rate_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_LEARNING_RATE_SCHEDULE_H_
