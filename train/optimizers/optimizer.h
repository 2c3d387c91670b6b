#ifndef SLUICE_TRAIN_OPTIMIZERS_OPTIMIZER_H_
#define SLUICE_TRAIN_OPTIMIZERS_OPTIMIZER_H_

#include <array>
#include <cstdint>
#include <deque>
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
#include "train/backend/optimizer_update.h"

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
  // (slots are saved by index into it). Refused inside a traced function: its host half
  // (PrepareStep) would run only while tracing.
  absl::Status Apply(const std::vector<std::optional<Tensor>>& grads,
                     const std::vector<autodiff::Variable*>& vars);

  // Apply in two halves, for a step traced into a function::Function (CompiledTrainStep), as
  // PyTorch's "capturable" optimizers keep their step on the device. PrepareStep, outside the
  // trace, does the host work: it advances iterations() and the schedule, writes the step's
  // scalars (the rate, the bias corrections, the decay: backend::StepScalar) into a tensor on
  // the variables' device, and makes the slots of every variable of `vars` (as Keras'
  // optimizer.build). UpdateVariables, inside the trace, runs one fused pass over the variables
  // with a gradient (backend::OptimizerUpdate) that reads those scalars where it runs: device work
  // only, so a replay or a CUDA graph updates with each step's values. Both need Traceable(); they
  // give what Apply gives. PrepareStep is refused inside a trace, and UpdateVariables refuses a
  // variable PrepareStep did not see (its slots would be made, and their start replayed, inside the
  // trace).
  bool Traceable() const { return clip_global_norm_ == 0; }
  absl::Status PrepareStep(const std::vector<autodiff::Variable*>& vars);
  absl::Status UpdateVariables(const std::vector<std::optional<Tensor>>& grads,
                               const std::vector<autodiff::Variable*>& vars);
  // Takes back a PrepareStep whose UpdateVariables never ran (the traced step failed before
  // it): iterations() and the shared scalars (Nadam's) are as before it.
  absl::Status CancelStep();
  // Changes whenever a setting changes that a traced UpdateVariables would freeze (the weight
  // decay exclusions, the clipping): a traced step made under another one traces again.
  int64_t generation() const { return generation_; }
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
  void set_clip_global_norm(float max_norm) {
    clip_global_norm_ = max_norm;
    ++generation_;
  }
  // Keras' exclude_from_weight_decay(var_names=...): a variable whose name contains any of
  // `name_parts` (e.g. {"bias", "batch_norm"}) is not decayed. Replaces an earlier list.
  // Only optimizers whose weight_decay option is set decay at all.
  void ExcludeFromWeightDecay(std::vector<std::string> name_parts) {
    weight_decay_exclusions_ = std::move(name_parts);
    ++generation_;
  }

  // The state of `vars`' slots on the host: slots on a device are copied, host ones as `host`
  // says (kShare for a checkpoint written at once).
  absl::StatusOr<OptimizerState> SaveState(
      const std::vector<autodiff::Variable*>& vars,
      autodiff::HostValues host = autodiff::HostValues::kCopy) const;
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

  // Called once per Apply with the step about to be taken (from 1), before the step's
  // update: Nadam advances its momentum schedule here, once however many variables there are.
  virtual void BeginStep(int64_t /*step*/) {}
  // The optimizer's shared scalars, for SaveState (OptimizerState::scalars).
  virtual std::vector<std::pair<std::string, double>> ScalarState() const { return {}; }
  // Replaces them from a state of `iterations` steps; an error leaves them as they were. The
  // default takes none.
  virtual absl::Status RestoreScalarState(
      const std::vector<std::pair<std::string, double>>& scalars, int64_t iterations);

  // What the kernels of step `step` (from 1) read from their step tensor (backend::StepScalar),
  // computed on the host after BeginStep(step). `decay` is learning_rate * weight_decay(); a
  // variable that is not decayed reads 0 instead.
  struct StepValues {
    float rate = 0;
    float decay = 0;
    float gradient_coefficient = 0;
    float v_scale = 0;
  };
  virtual StepValues ValuesAt(int64_t step, float learning_rate) const = 0;
  // The optimizer's weight decay option: whether any variable needs a decayed step tensor.
  virtual float weight_decay() const = 0;
  // The update's rule and constants: every variable's update is one backend OptimizerUpdate
  // over all the variables that share a step tensor (one pass, one kernel on a GPU), device work
  // only, so it may be traced.
  virtual backend::UpdateRule Rule() const = 0;
  // Which of slot_names() fills each of the rule's slots (optimizer_update.h's order), -1 for
  // none: by default slot j is slot_names()[j].
  virtual std::array<int, backend::kMaxUpdateSlots> RuleSlots() const;
  // Refuses options no update can run with; Apply and PrepareStep call it first, so a refused
  // step changes nothing.
  virtual absl::Status CheckOptions() const { return absl::OkStatus(); }

  // Slot `index` (of slot_names) of `var`, on the variable's device, at its initial value on
  // first use.
  absl::StatusOr<Tensor*> Slot(autodiff::Variable& var, int index);
  // Whether weight decay applies to `var` (ExcludeFromWeightDecay).
  bool DecaysWeightsOf(const autodiff::Variable& var) const;

 private:
  // Every slot of a variable of `shape` on `device`, at its initial value.
  absl::StatusOr<std::vector<Tensor>> NewSlots(const Device& device, const Shape& shape) const;
  // The host half of a step: the rate, iterations_, BeginStep, ValuesAt; then every step tensor
  // the variables of `vars` (those with a gradient, when `grads` is given) read is made and holds
  // those values.
  absl::Status AdvanceStep(const std::vector<autodiff::Variable*>& vars,
                           const std::vector<std::optional<Tensor>>* grads);
  // The device half, shared by Apply and UpdateVariables: finds every step tensor and slot (with
  // `slots_made`, checks every slot was made) before the first kernel, then updates the
  // variables with a gradient, one OptimizerUpdate per step tensor; with a `scale` (clipping)
  // other than 1, one variable at a time, its gradient times `scale`.
  absl::Status UpdateEach(const std::vector<std::optional<Tensor>>& grads,
                          const std::vector<autodiff::Variable*>& vars, float scale,
                          bool slots_made);
  // The step tensor `var` reads (made by AdvanceStep): with the decay, or with 0 where `var` is
  // not decayed.
  absl::StatusOr<const Tensor*> StepTensorFor(const autodiff::Variable& var, bool make);

  // A step tensor and what was last written to it, so that a step writes only what changed (one
  // Fill kernel per changed entry; a copy from the host would wait for the device).
  struct StepTensor {
    Device device = Device::Cpu();
    bool decayed = false;
    Tensor tensor;
    float written[4] = {};
    bool fresh = true;  // nothing written yet
  };

  float initial_learning_rate_;
  float base_learning_rate_;
  std::shared_ptr<const LearningRateSchedule> schedule_;
  float clip_global_norm_ = 0;
  int64_t iterations_ = 0;
  std::vector<std::string> slot_names_;
  std::vector<float> slot_initial_values_;
  std::vector<std::string> weight_decay_exclusions_;
  std::map<const autodiff::Variable*, std::vector<Tensor>> slots_;
  // iterations_ and ScalarState() before the last PrepareStep, until its UpdateVariables.
  struct PreparedFrom {
    int64_t iterations = 0;
    std::vector<std::pair<std::string, double>> scalars;
  };
  std::optional<PreparedFrom> prepared_from_;
  std::deque<StepTensor> step_tensors_;  // a deque: StepTensorFor hands out pointers
  int64_t generation_ = 0;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_OPTIMIZER_H_
