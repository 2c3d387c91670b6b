#ifndef SLUICE_TRAIN_OPTIMIZERS_OPTIMIZER_H_
#define SLUICE_TRAIN_OPTIMIZERS_OPTIMIZER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/autodiff/variable.h"

namespace sluice::train::optimizers {

class LearningRateSchedule;  // train/lr_schedule.h

// What a checkpoint stores of an optimizer.
struct OptimizerState {
  int64_t iterations = 0;
  float learning_rate = 0;  // the base rate (after ReduceLROnPlateau changed it)
  // Slot tensors named "<slot>/<variable index>", e.g. "m/3", "velocity/0". A
  // variable that never had a gradient has no slots yet (they start at zero).
  std::vector<std::pair<std::string, Tensor>> slots;
  // State shared by every variable, by name: Nadam's "u_product" (the product of its momentum
  // schedule so far). Empty for the other optimizers.
  std::vector<std::pair<std::string, double>> scalars;
};

// `options` with `learning_rate` in it: for the optimizers' Keras-style (learning_rate, options)
// constructors.
template <typename Options>
Options WithLearningRate(Options options, float learning_rate) {
  options.learning_rate = learning_rate;
  return options;
}

// Updates variables in place from their gradients, as Keras'
// optimizer.apply_gradients. A variable whose gradient is nullopt is left
// alone (it did not contribute to the loss). Slots (momentum, Adam's m and v)
// are created lazily, zero, on a variable's first gradient.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // grads[i] is the gradient of vars[i]; `vars` keeps one order across calls
  // (slots are saved by index into it).
  absl::Status Apply(const std::vector<std::optional<Tensor>>& grads,
                     const std::vector<autodiff::Variable*>& vars);
  int64_t iterations() const { return iterations_; }

  // The rate the next Apply() uses: the schedule's value at iterations() when a schedule is
  // set (scaled by base / initial base if set_learning_rate changed it), else the base rate.
  float learning_rate() const;
  void set_learning_rate(float base) { base_learning_rate_ = base; }
  // The rate set last (or at construction), which a schedule is scaled by.
  float base_learning_rate() const { return base_learning_rate_; }
  void set_schedule(std::shared_ptr<const LearningRateSchedule> schedule) {
    schedule_ = std::move(schedule);
  }
  // Clip gradients by their global norm before each update (tf.clip_by_global_norm); 0: off.
  void set_clip_global_norm(float max_norm) { clip_global_norm_ = max_norm; }
  // Keras' exclude_from_weight_decay(var_names=...): a variable whose name contains any of
  // `name_parts` (e.g. {"bias", "batch_norm"}) is not decayed. Replaces an earlier list.
  // Only optimizers whose weight_decay option is set decay at all.
  void ExcludeFromWeightDecay(std::vector<std::string> name_parts) {
    weight_decay_exclusions_ = std::move(name_parts);
  }

  absl::StatusOr<OptimizerState> SaveState(const std::vector<autodiff::Variable*>& vars) const;
  // Replaces iterations, base rate, slots and scalars; every slot must name a slot of
  // this optimizer and a variable of `vars` with the slot's shape, every scalar one of this
  // optimizer's. Nothing changes when it fails.
  absl::Status RestoreState(const OptimizerState& state,
                            const std::vector<autodiff::Variable*>& vars);

 protected:
  // `slot_names`: the per-variable state this optimizer keeps, in order; `slot_initial_values`
  // (one per slot, or empty for all zeros) what each starts at: Adagrad's accumulator starts at
  // its initial_accumulator_value.
  Optimizer(float learning_rate, std::vector<std::string> slot_names,
            std::vector<float> slot_initial_values = {});

  // Called once per Apply with the step about to be taken (from 1), before any variable's
  // Update: Nadam advances its momentum schedule here, once however many variables there are.
  virtual void BeginStep(int64_t /*step*/) {}
  // The optimizer's shared scalars, for SaveState (OptimizerState::scalars).
  virtual std::vector<std::pair<std::string, double>> ScalarState() const { return {}; }
  // Replaces them from a state of `iterations` steps; an error leaves them as they were. The
  // default takes none.
  virtual absl::Status RestoreScalarState(
      const std::vector<std::pair<std::string, double>>& scalars, int64_t iterations);

  // One variable's update with `learning_rate`, through the backend of the variable's
  // device; `step` counts from 1.
  virtual absl::Status Update(autodiff::Variable& var, const Tensor& grad, int64_t step,
                              float learning_rate) = 0;

  // Slot `index` (of slot_names) of `var`, on the variable's device, at its initial value on
  // first use.
  absl::StatusOr<Tensor*> Slot(autodiff::Variable& var, int index);
  // Whether weight decay applies to `var` (ExcludeFromWeightDecay).
  bool DecaysWeightsOf(const autodiff::Variable& var) const;

 private:
  // Every slot of a variable of `shape` on `device`, at its initial value.
  absl::StatusOr<std::vector<Tensor>> NewSlots(const Device& device, const Shape& shape) const;

  float initial_learning_rate_;
  float base_learning_rate_;
  std::shared_ptr<const LearningRateSchedule> schedule_;
  float clip_global_norm_ = 0;
  int64_t iterations_ = 0;
  std::vector<std::string> slot_names_;
  std::vector<float> slot_initial_values_;
  std::vector<std::string> weight_decay_exclusions_;
  std::map<const autodiff::Variable*, std::vector<Tensor>> slots_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_OPTIMIZER_H_
