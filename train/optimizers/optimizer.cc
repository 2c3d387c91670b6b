#include "train/optimizers/optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/sum_all.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"
#include "train/optimizers/learning_rate_schedule.h"
#include "train/optimizers/scaled_copy.h"
#include "train/optimizers/sum_of_squares.h"

namespace sluice::train::optimizers {

Optimizer::Optimizer(float learning_rate, std::vector<std::string> slot_names,
                     std::vector<float> slot_initial_values)
    : initial_learning_rate_(learning_rate),
      base_learning_rate_(learning_rate),
      slot_names_(std::move(slot_names)),
      slot_initial_values_(std::move(slot_initial_values)) {
  slot_initial_values_.resize(slot_names_.size(), 0.0f);
}

absl::Status Optimizer::RestoreScalarState(
    const std::vector<std::pair<std::string, double>>& scalars, int64_t) {
  if (!scalars.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Optimizer::RestoreState: scalar '", scalars[0].first,
                     "' is not one of this optimizer's (it has none)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Optimizer::NewSlots(const Device& device,
                                                        const Shape& shape) const {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(device));
  std::vector<Tensor> slots;
  for (size_t i = 0; i < slot_names_.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(Tensor slot, backend->Allocate(DType::kFloat32, shape));
    SLUICE_RETURN_IF_ERROR(backend->Fill(slot, slot_initial_values_[i]));
    slots.push_back(std::move(slot));
  }
  return slots;
}

bool Optimizer::DecaysWeightsOf(const autodiff::Variable& var) const {
  return std::none_of(weight_decay_exclusions_.begin(), weight_decay_exclusions_.end(),
                      [&](const std::string& part) { return absl::StrContains(var.name(), part); });
}

float Optimizer::learning_rate() const {
  if (!schedule_) return base_learning_rate_;
  const float scheduled = (*schedule_)(iterations_);
  // With no initial rate to compare against, a base rate cannot scale the schedule.
  if (initial_learning_rate_ == 0 || base_learning_rate_ == initial_learning_rate_) {
    return scheduled;
  }
  return static_cast<float>(static_cast<double>(scheduled) * base_learning_rate_ /
                            initial_learning_rate_);
}

namespace {

absl::Status CheckGradients(absl::string_view who, const std::vector<std::optional<Tensor>>& grads,
                            const std::vector<autodiff::Variable*>& vars) {
  if (grads.size() != vars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": ", grads.size(), " gradients for ", vars.size(), " variables"));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i]) continue;
    if (grads[i]->dtype() != DType::kFloat32 || grads[i]->shape() != vars[i]->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": gradient ", i, " is ", DTypeName(grads[i]->dtype()),
                       grads[i]->shape().DebugString(), " but variable '", vars[i]->name(),
                       "' is float32", vars[i]->shape().DebugString()));
    }
    if (grads[i]->device() != vars[i]->device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": gradient ", i, " is on ", grads[i]->device().DebugString(), " but variable '",
          vars[i]->name(), "' is on ", vars[i]->device().DebugString()));
    }
  }
  // One pass updates every variable at once: a variable listed twice would be written by two
  // threads (or GPU blocks) at the same time.
  std::vector<const autodiff::Variable*> seen;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i]) continue;
    if (std::find(seen.begin(), seen.end(), vars[i]) != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": variable '", vars[i]->name(), "' is listed twice"));
    }
    seen.push_back(vars[i]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Optimizer::Apply(const std::vector<std::optional<Tensor>>& grads,
                              const std::vector<autodiff::Variable*>& vars) {
  if (backend::Tracing()) {
    return absl::FailedPreconditionError(
        "cannot trace this step: it applies an optimizer (Optimizer::Apply), whose learning rate "
        "and step-dependent coefficients are host values of each step; call PrepareStep outside "
        "the traced function and UpdateVariables inside it, or apply the gradients outside it");
  }
  SLUICE_RETURN_IF_ERROR(CheckGradients("Optimizer::Apply", grads, vars));
  SLUICE_RETURN_IF_ERROR(CheckOptions());
  // tf.clip_by_global_norm: every gradient times max_norm / max(norm, max_norm).
  float scale = 1;
  if (clip_global_norm_ > 0) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> total, SumOfSquares(grads, "clip_global_norm"));
    float sum_sq = 0;
    if (total) {
      SLUICE_ASSIGN_OR_RETURN(sum_sq, backend::ReadScalar(*total));
    }
    const double norm = std::sqrt(static_cast<double>(sum_sq));
    if (norm > clip_global_norm_) scale = static_cast<float>(clip_global_norm_ / norm);
  }
  SLUICE_RETURN_IF_ERROR(AdvanceStep(vars, &grads));
  return UpdateEach(grads, vars, scale, /*slots_made=*/false);
}

absl::Status Optimizer::PrepareStep(const std::vector<autodiff::Variable*>& vars) {
  if (backend::Tracing()) {
    // Its allocations and writes would be recorded, and replayed with this step's values.
    return absl::FailedPreconditionError(
        "cannot trace this step: it calls Optimizer::PrepareStep, the host half of the update, "
        "which belongs before the traced function");
  }
  if (!Traceable()) {
    return absl::FailedPreconditionError(
        "Optimizer::PrepareStep: clip_global_norm computes its scale on the host at each step, "
        "so this optimizer's update cannot be traced; use Apply");
  }
  if (!slot_names_.empty()) {
    for (autodiff::Variable* var : vars) SLUICE_RETURN_IF_ERROR(Slot(*var, 0).status());
  }
  SLUICE_RETURN_IF_ERROR(CheckOptions());
  prepared_from_ = PreparedFrom{.iterations = iterations_, .scalars = ScalarState()};
  return AdvanceStep(vars, nullptr);
}

absl::Status Optimizer::CancelStep() {
  if (!prepared_from_) {
    return absl::FailedPreconditionError("Optimizer::CancelStep: no step was prepared");
  }
  PreparedFrom from = *std::move(prepared_from_);
  prepared_from_.reset();
  SLUICE_RETURN_IF_ERROR(RestoreScalarState(from.scalars, from.iterations));
  iterations_ = from.iterations;
  return absl::OkStatus();
}

absl::Status Optimizer::UpdateVariables(const std::vector<std::optional<Tensor>>& grads,
                                        const std::vector<autodiff::Variable*>& vars) {
  SLUICE_RETURN_IF_ERROR(CheckGradients("Optimizer::UpdateVariables", grads, vars));
  SLUICE_RETURN_IF_ERROR(UpdateEach(grads, vars, /*scale=*/1, /*slots_made=*/true));
  prepared_from_.reset();
  return absl::OkStatus();
}

absl::Status Optimizer::UpdateEach(const std::vector<std::optional<Tensor>>& grads,
                                   const std::vector<autodiff::Variable*>& vars, float scale,
                                   bool slots_made) {
  const backend::UpdateRule rule = Rule();
  const std::array<int, backend::kMaxUpdateSlots> rule_slots = RuleSlots();
  // Everything the kernels read must exist before the first of them runs: made inside a trace, a
  // slot's start would be replayed at every step, and a refusal after some updates would leave
  // the others undone. The variables that read one step tensor (one device, decayed or not) are
  // one backend call: one pass over all of them.
  struct Group {
    const Tensor* step;
    std::vector<backend::UpdateOperands> vars;
  };
  std::vector<Group> groups;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i]) continue;
    if (slots_made && !slot_names_.empty() && !slots_.contains(vars[i])) {
      return absl::FailedPreconditionError(
          absl::StrCat("Optimizer::UpdateVariables: variable '", vars[i]->name(),
                       "' has no slots yet (call PrepareStep with it first)"));
    }
    SLUICE_ASSIGN_OR_RETURN(const Tensor* step, StepTensorFor(*vars[i], /*make=*/false));
    backend::UpdateOperands var{.w = &vars[i]->mutable_value(), .g = &*grads[i]};
    for (int j = 0; j < backend::kMaxUpdateSlots; ++j) {
      if (rule_slots[j] < 0) continue;
      SLUICE_ASSIGN_OR_RETURN(var.slots[j], Slot(*vars[i], rule_slots[j]));
    }
    auto group =
        std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.step == step; });
    if (group == groups.end()) group = groups.insert(groups.end(), Group{.step = step});
    group->vars.push_back(var);
  }
  for (const Group& group : groups) {
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(group.step->device()));
    if (scale == 1) {
      SLUICE_RETURN_IF_ERROR(backend->OptimizerUpdate(rule, group.vars, *group.step));
      continue;
    }
    for (backend::UpdateOperands var : group.vars) {
      // One clipped copy alive at a time.
      SLUICE_ASSIGN_OR_RETURN(const Tensor clipped, ScaledCopy(*var.g, scale, "clip_global_norm"));
      var.g = &clipped;
      SLUICE_RETURN_IF_ERROR(backend->OptimizerUpdate(rule, {&var, 1}, *group.step));
    }
  }
  return absl::OkStatus();
}

std::array<int, backend::kMaxUpdateSlots> Optimizer::RuleSlots() const {
  std::array<int, backend::kMaxUpdateSlots> slots;
  for (int j = 0; j < backend::kMaxUpdateSlots; ++j) {
    slots[j] = j < static_cast<int>(slot_names_.size()) ? j : -1;
  }
  return slots;
}

absl::Status Optimizer::AdvanceStep(const std::vector<autodiff::Variable*>& vars,
                                    const std::vector<std::optional<Tensor>>* grads) {
  const float lr = learning_rate();
  ++iterations_;
  BeginStep(iterations_);
  const StepValues now = ValuesAt(iterations_, lr);
  // Only the step tensors this step's variables read: one left on a device the model moved off
  // is not written again.
  std::vector<const Tensor*> used;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (grads == nullptr || (*grads)[i]) {
      SLUICE_ASSIGN_OR_RETURN(const Tensor* step, StepTensorFor(*vars[i], /*make=*/true));
      used.push_back(step);
    }
  }
  for (StepTensor& step : step_tensors_) {
    if (std::find(used.begin(), used.end(), &step.tensor) == used.end()) continue;
    static_assert(sizeof(step.written) == backend::kStepScalars * sizeof(float));
    const float values[backend::kStepScalars] = {now.rate, step.decayed ? now.decay : 0.0f,
                                                 now.gradient_coefficient, now.v_scale};
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(step.device));
    for (int i = 0; i < backend::kStepScalars; ++i) {
      // Compared as bits: a NaN rate is written too.
      if (!step.fresh && std::memcmp(&step.written[i], &values[i], sizeof(float)) == 0) continue;
      SLUICE_ASSIGN_OR_RETURN(Tensor entry, step.tensor.Slice(i, i + 1));
      SLUICE_RETURN_IF_ERROR(backend->Fill(entry, values[i]));
      step.written[i] = values[i];
    }
    step.fresh = false;
  }
  return absl::OkStatus();
}

absl::StatusOr<const Tensor*> Optimizer::StepTensorFor(const autodiff::Variable& var, bool make) {
  const Device device = var.device();
  const bool decayed = weight_decay() != 0 && DecaysWeightsOf(var);
  for (const StepTensor& step : step_tensors_) {
    if (step.device == device && step.decayed == decayed) return &step.tensor;
  }
  if (!make) {
    return absl::FailedPreconditionError(
        absl::StrCat("Optimizer::UpdateVariables: no step scalars on ", device.DebugString(),
                     " for variable '", var.name(), "' (call PrepareStep with it first)"));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(device));
  SLUICE_ASSIGN_OR_RETURN(Tensor tensor,
                          backend->Allocate(DType::kFloat32, Shape({backend::kStepScalars})));
  step_tensors_.push_back(
      StepTensor{.device = device, .decayed = decayed, .tensor = std::move(tensor)});
  return &step_tensors_.back().tensor;
}

absl::StatusOr<Tensor*> Optimizer::Slot(autodiff::Variable& var, int index) {
  auto it = slots_.find(&var);
  if (it == slots_.end()) {
    // mutable_value(): value() would be watched by an active tape.
    const Tensor& value = var.mutable_value();
    SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> initial, NewSlots(value.device(), value.shape()));
    it = slots_.emplace(&var, std::move(initial)).first;
  }
  return &it->second[index];
}

absl::StatusOr<OptimizerState> Optimizer::SaveState(const std::vector<autodiff::Variable*>& vars,
                                                    autodiff::HostValues host) const {
  OptimizerState state{.iterations = iterations_, .learning_rate = base_learning_rate_};
  for (size_t i = 0; i < vars.size(); ++i) {
    auto it = slots_.find(vars[i]);
    if (it == slots_.end()) continue;
    for (size_t s = 0; s < slot_names_.size(); ++s) {
      SLUICE_ASSIGN_OR_RETURN(Tensor value, autodiff::HostSnapshot(it->second[s], host));
      state.slots.emplace_back(absl::StrCat(slot_names_[s], "/", i), std::move(value));
    }
  }
  state.scalars = ScalarState();
  return state;
}

absl::Status Optimizer::RestoreState(const OptimizerState& state,
                                     const std::vector<autodiff::Variable*>& vars) {
  std::map<const autodiff::Variable*, std::vector<Tensor>> slots;
  for (const auto& [name, value] : state.slots) {
    const size_t slash = name.rfind('/');
    int slot = -1;
    for (size_t s = 0; s < slot_names_.size(); ++s) {
      if (slash != std::string::npos && name.compare(0, slash, slot_names_[s]) == 0 &&
          slash == slot_names_[s].size()) {
        slot = static_cast<int>(s);
      }
    }
    size_t index = 0;
    if (slot < 0 || !absl::SimpleAtoi(absl::string_view(name).substr(slash + 1), &index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Optimizer::RestoreState: slot '", name,
                       "' is not '<slot>/<variable index>' with a slot of this optimizer (",
                       slot_names_.empty() ? "it has none" : slot_names_[0], "...)"));
    }
    if (index >= vars.size()) {
      return absl::InvalidArgumentError(absl::StrCat("Optimizer::RestoreState: slot '", name,
                                                     "' names variable ", index, " but there are ",
                                                     vars.size(), " variables"));
    }
    if (value.dtype() != DType::kFloat32 || value.shape() != vars[index]->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Optimizer::RestoreState: slot '", name, "' is ", DTypeName(value.dtype()),
                       value.shape().DebugString(), " but variable '", vars[index]->name(),
                       "' is float32", vars[index]->shape().DebugString()));
    }
    // Slots live on their variable's device; one missing from the state starts at its initial
    // value.
    const Device device = vars[index]->device();
    auto& entry = slots[vars[index]];
    if (entry.empty()) {
      SLUICE_ASSIGN_OR_RETURN(entry, NewSlots(device, vars[index]->shape()));
    }
    SLUICE_ASSIGN_OR_RETURN(entry[slot], backend::CopyTo(value, device));
  }
  // Last of the checks: it changes the scalars only when it succeeds.
  SLUICE_RETURN_IF_ERROR(RestoreScalarState(state.scalars, state.iterations));
  slots_ = std::move(slots);
  ++generation_;  // new slot tensors: a traced update still writes the old ones
  iterations_ = state.iterations;
  base_learning_rate_ = state.learning_rate;
  return absl::OkStatus();
}

}  // namespace sluice::train::optimizers
