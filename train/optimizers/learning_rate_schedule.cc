#include "train/optimizers/learning_rate_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"

namespace sluice::train::optimizers {

float ExponentialDecay::operator()(int64_t step) const {
  double exponent = static_cast<double>(step) / static_cast<double>(options_.decay_steps);
  if (options_.staircase) exponent = std::floor(exponent);
  return static_cast<float>(options_.initial_learning_rate *
                            std::pow(options_.decay_rate, exponent));
}

std::shared_ptr<const LearningRateSchedule> StepDecay(double initial_learning_rate,
                                                      int64_t decay_steps, double decay_rate) {
  return std::make_shared<ExponentialDecay>(
      ExponentialDecayOptions{.initial_learning_rate = initial_learning_rate,
                              .decay_steps = decay_steps,
                              .decay_rate = decay_rate,
                              .staircase = true});
}

absl::StatusOr<std::shared_ptr<const PiecewiseConstantDecay>> PiecewiseConstantDecay::Create(
    std::vector<int64_t> boundaries, std::vector<float> values) {
  if (values.size() != boundaries.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat("PiecewiseConstantDecay: ", boundaries.size(),
                                                   " boundaries need ", boundaries.size() + 1,
                                                   " values, got ", values.size()));
  }
  for (size_t i = 1; i < boundaries.size(); ++i) {
    if (boundaries[i] <= boundaries[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("PiecewiseConstantDecay: boundaries must increase, but boundary ", i, " (",
                       boundaries[i], ") follows ", boundaries[i - 1]));
    }
  }
  return std::shared_ptr<const PiecewiseConstantDecay>(
      new PiecewiseConstantDecay(std::move(boundaries), std::move(values)));
}

float PiecewiseConstantDecay::operator()(int64_t step) const {
  // The first boundary not below `step`: Keras' intervals are closed on the right.
  const auto it = std::lower_bound(boundaries_.begin(), boundaries_.end(), step);
  return values_[it - boundaries_.begin()];
}

float CosineDecay::operator()(int64_t step) const {
  const double decay_steps = static_cast<double>(options_.decay_steps);
  const double fraction = std::min(static_cast<double>(step), decay_steps) / decay_steps;
  const double cosine = 0.5 * (1 + std::cos(std::numbers::pi * fraction));
  return static_cast<float>(options_.initial_learning_rate *
                            ((1 - options_.alpha) * cosine + options_.alpha));
}

float LinearWarmup::operator()(int64_t step) const {
  if (step >= warmup_steps_) return (*after_)(step - warmup_steps_);
  const double target = (*after_)(0);
  const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps_);
  return static_cast<float>(initial_learning_rate_ + (target - initial_learning_rate_) * fraction);
}

}  // namespace sluice::train::optimizers
