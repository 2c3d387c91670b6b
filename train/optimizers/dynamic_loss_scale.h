#ifndef SLUICE_TRAIN_OPTIMIZERS_DYNAMIC_LOSS_SCALE_H_
#define SLUICE_TRAIN_OPTIMIZERS_DYNAMIC_LOSS_SCALE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::optimizers {

// Keras' defaults for LossScaleOptimizer(dynamic=True).
struct DynamicLossScaleOptions {
  float initial_scale = 32768;  // 2^15
  int64_t growth_steps = 2000;  // finite steps in a row before the scale doubles
};

// Dynamic loss scaling, as Keras' LossScaleOptimizer: float16 gradients underflow, so the loss
// is multiplied by `scale()` before the backward pass and the gradients divided by it after.
// A step whose gradients overflow (inf or NaN) is skipped and halves the scale; `growth_steps`
// finite steps in a row double it. Scales stay powers of two, so scaling and unscaling are
// exact: with no overflow, the step equals the unscaled one bit for bit. Fit applies it under
// the mixed_float16 policy (TrainerOptions::loss_scale).
class DynamicLossScale {
 public:
  // InvalidArgument unless initial_scale is a power of two >= 1 and growth_steps >= 1.
  static absl::StatusOr<DynamicLossScale> Create(DynamicLossScaleOptions options = {});

  float scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_steps_; }

  // What a training checkpoint keeps, so that a resumed run scales, grows and skips exactly as
  // the uninterrupted one.
  struct State {
    float scale = 1;
    int64_t finite_steps = 0;  // in a row, since the scale last changed
    int64_t skipped_steps = 0;
  };
  State state() const { return {scale_, finite_steps_, skipped_steps_}; }
  // Continues from `state`; DataLoss, naming the field, unless the scale is a finite power of
  // two >= 1, finite_steps lies in [0, growth_steps) and skipped_steps >= 0 (it comes from a
  // file).
  absl::Status Restore(const State& state);

  // Replaces each gradient by gradient / scale() (on its device) and returns whether all of
  // them are finite, then moves the scale on. Reads one number back from the device.
  absl::StatusOr<bool> UnscaleAndUpdate(std::vector<std::optional<Tensor>>& grads);

 private:
  explicit DynamicLossScale(DynamicLossScaleOptions options)
      : options_(options), scale_(options.initial_scale) {}

  DynamicLossScaleOptions options_;
  float scale_;
  int64_t finite_steps_ = 0;  // in a row, since the scale last changed
  int64_t skipped_steps_ = 0;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_DYNAMIC_LOSS_SCALE_H_
