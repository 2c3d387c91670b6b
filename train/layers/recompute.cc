#include "train/layers/recompute.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"

namespace sluice::train::layers {
namespace {

using Grads = std::vector<std::optional<Tensor>>;

// The variables a forward pass may change: Dropout's call counter, BatchNorm's moving statistics.
// Weights (trainable, frozen or not) are only read.
std::vector<autodiff::Variable*> StateVariables(const std::vector<Module*>& modules) {
  std::vector<autodiff::Variable*> state;
  for (Module* module : modules) {
    for (autodiff::Variable* v : module->Variables()) {
      if (!v->trainable()) state.push_back(v);
    }
  }
  return state;
}

// Dropout's call counter lives on the host (Variable::KeepOnHost). While a step is traced for
// another device (CUDA), a copy of it is plain host code, which runs at the trace and not at the
// replays: then the recomputation's Dropout would draw the next mask, not the forward pass's.
// Such copies are handed to the recorder to run again, in order, at every replay.
bool CopiedAtTheTraceOnly(const autodiff::Variable& v) {
  const backend::Backend* tracing = backend::internal::TracingBackend();
  return tracing != nullptr && v.host_resident() && !tracing->device().is_cpu();
}

absl::StatusOr<std::vector<Tensor>> Snapshot(const std::vector<autodiff::Variable*>& vars) {
  std::vector<Tensor> values;
  values.reserve(vars.size());
  for (autodiff::Variable* v : vars) {
    SLUICE_ASSIGN_OR_RETURN(Tensor copy, backend::Clone(v->mutable_value()));
    if (CopiedAtTheTraceOnly(*v)) {
      SLUICE_RETURN_IF_ERROR(
          backend::CheckAtEveryReplay("Recompute: save state", copy, [v](const Tensor& saved) {
            Tensor into = saved;  // the same storage
            return backend::CopyInto(v->mutable_value(), into);
          }));
    }
    values.push_back(std::move(copy));
  }
  return values;
}

absl::Status Restore(const std::vector<autodiff::Variable*>& vars,
                     const std::vector<Tensor>& values) {
  for (size_t i = 0; i < vars.size(); ++i) {
    autodiff::Variable* v = vars[i];
    if (CopiedAtTheTraceOnly(*v)) {
      // Runs now, and at every replay.
      SLUICE_RETURN_IF_ERROR(
          backend::CheckAtEveryReplay("Recompute: restore state", values[i],
                                      [v](const Tensor& saved) { return v->Assign(saved); }));
    } else {
      SLUICE_RETURN_IF_ERROR(v->Assign(values[i]));
    }
  }
  return absl::OkStatus();
}

// The wrapped forward pass again, on a tape of its own that sees nothing of the outer one, under
// the forward pass's precision: the gradients of its output, seeded with `grad_output`, with
// respect to `input` and `weights` (in that order).
absl::StatusOr<Grads> Recomputed(const RecomputeFn& forward, const Tensor& input, bool training,
                                 backend::Precision precision,
                                 const std::vector<autodiff::Variable*>& weights,
                                 const Shape& output_shape, Tensor grad_output) {
  autodiff::IsolatedRecording isolated;  // before the tape: the tape must live inside it
  backend::ScopedPrecision scoped_precision(precision);
  autodiff::Tape tape;
  tape.Watch(input);
  SLUICE_ASSIGN_OR_RETURN(Tensor output, forward(input, training));
  if (output.shape() != output_shape) {
    // A module whose output depends on more than its input, variables and state.
    return absl::InternalError(absl::StrCat("the recomputed output is ",
                                            output.shape().DebugString(), ", the forward pass's ",
                                            output_shape.DebugString()));
  }
  std::vector<Tensor> sources = {input};
  sources.reserve(1 + weights.size());
  // The very tensors the recomputation read (and the tape watched), not a watching value() read.
  for (autodiff::Variable* w : weights) sources.push_back(w->mutable_value());
  // Moved: the output and the incoming gradient are freed once the ops that read them are past,
  // not at the end of the walk.
  return tape.Gradient(std::move(output), sources, std::move(grad_output));
}

}  // namespace

absl::StatusOr<Tensor> RecomputeGrad(absl::string_view name, std::vector<Module*> modules,
                                     const Tensor& input, bool training, RecomputeFn forward) {
  // Nothing would be kept anyway (inference, evaluation); and a lazy module's first call creates
  // its state during the forward pass, so there is no earlier state to recompute from: that one
  // call is recorded as without recomputation.
  if (!autodiff::RecordingActive() ||
      !std::all_of(modules.begin(), modules.end(), [](Module* m) { return m->built(); })) {
    return forward(input, training);
  }
  const std::vector<autodiff::Variable*> state = StateVariables(modules);
  SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> state_before, Snapshot(state));
  const backend::Precision precision = backend::CurrentPrecision();
  Tensor output;
  {
    autodiff::PauseRecording pause;
    SLUICE_ASSIGN_OR_RETURN(output, forward(input, training));
  }
  if (output.raw_data() == input.raw_data()) {
    // The tape knows a tensor by its buffer: an output that is its input needs its own.
    SLUICE_ASSIGN_OR_RETURN(output, backend::Clone(output));
  }
  // After the forward pass: a frozen weight is not one (no gradient), and the set is fixed now.
  std::vector<autodiff::Variable*> weights;
  for (Module* module : modules) {
    for (autodiff::Variable* w : module->TrainableVariables()) weights.push_back(w);
  }
  std::vector<Tensor> inputs = {input};
  inputs.reserve(1 + weights.size());
  // Reading value() outside the pause watches each weight, as the unpaused forward's reads would.
  for (autodiff::Variable* w : weights) inputs.push_back(w->value());
  if (!autodiff::ShouldRecord(inputs)) return output;

  autodiff::BackwardFn backward =
      [name = std::string(name), forward = std::move(forward), input, training, precision,
       weights = std::move(weights), state, state_before = std::move(state_before),
       output_shape = output.shape()](Tensor grad_output) -> absl::StatusOr<Grads> {
    // The recomputation starts where the forward pass started (the same Dropout masks, BatchNorm
    // moving from the same statistics), and what it changes is then undone: the state stays as
    // the forward pass left it, moved once.
    SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> state_after, Snapshot(state));
    SLUICE_RETURN_IF_ERROR(Restore(state, state_before));
    absl::StatusOr<Grads> grads = Recomputed(forward, input, training, precision, weights,
                                             output_shape, std::move(grad_output));
    const absl::Status restored = Restore(state, state_after);
    if (!grads.ok()) {
      return WithContext(
          grads.status(),
          absl::StrCat("recompute (", name, "): recomputing the forward pass for its gradient: "));
    }
    SLUICE_RETURN_IF_ERROR(restored);
    return grads;
  };
  autodiff::RecordOperation(inputs, output, backward);
  return output;
}

Recompute::Recompute(std::unique_ptr<Module> module) : module_(std::move(module)) {}

absl::StatusOr<Tensor> Recompute::Forward(const Tensor& input, bool training) {
  Module* module = module_.get();
  return RecomputeGrad(module->name(), {module}, input, training,
                       [module](const Tensor& x, bool t) { return module->Forward(x, t); });
}

absl::StatusOr<LayerConfig> Recompute::GetConfig() {
  SLUICE_ASSIGN_OR_RETURN(LayerConfig inner, module_->GetConfig());
  return LayerConfig{.class_name = "Recompute", .layers = {std::move(inner)}};
}

}  // namespace sluice::train::layers
