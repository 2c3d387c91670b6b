#include "train/layers/module.h"

#include <cstdio>
#include <cstdlib>

#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/trace_hooks.h"
#include "train/ops/activations.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> Module::ForwardRelu(const Tensor& input, bool training) {
  SLUICE_ASSIGN_OR_RETURN(Tensor y, Forward(input, training));
  return ops::Relu(y);
}

std::vector<autodiff::Variable*> Module::TrainableVariables() {
  std::vector<autodiff::Variable*> out;
  for (autodiff::Variable* v : Variables()) {
    if (v->updated()) out.push_back(v);
  }
  return out;
}

std::vector<autodiff::Variable*> Module::NonTrainableVariables() {
  std::vector<autodiff::Variable*> out;
  for (autodiff::Variable* v : Variables()) {
    if (!v->updated()) out.push_back(v);
  }
  return out;
}

absl::StatusOr<Tensor> Module::ForwardInputs(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": takes one input, got ", inputs.size()));
  }
  return Forward(inputs[0], training);
}

void Module::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (Module* child : Children()) child->set_trainable(trainable);
  for (autodiff::Variable* v : Variables()) v->set_frozen(!trainable);
}

bool Module::trainable() {
  bool any_weight = false;
  for (autodiff::Variable* v : Variables()) {
    if (!v->trainable()) continue;
    if (!v->frozen()) return true;
    any_weight = true;
  }
  return any_weight ? false : trainable_;
}

absl::Status Module::Build(const Shape& input_shape) {
  if (built()) return absl::OkStatus();
  if (input_shape.rank() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": Build needs an input shape with a batch dimension, got ",
                     input_shape.DebugString()));
  }
  // On the device of the layers built already (the CPU when none is): a model moved with To
  // before its lazy layers were built ran its built ones on CPU zeros, a device mismatch.
  const absl::Status called = CallOnZeros(*this, input_shape, device());
  if (!called.ok()) {
    return WithContext(called,
                       absl::StrCat(name(), ": building for input ", input_shape.DebugString(),
                                    " (called once on zeros of batch 1): "));
  }
  return absl::OkStatus();
}

absl::Status CallOnZeros(Module& module, const Shape& input_shape, const Device& device) {
  if (input_shape.rank() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("an input shape needs a batch dimension, got ", input_shape.DebugString()));
  }
  Shape one = input_shape;
  one.set_dim(0, 1);
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(device));
  SLUICE_ASSIGN_OR_RETURN(Tensor zeros, backend->Allocate(DType::kFloat32, one));
  SLUICE_RETURN_IF_ERROR(backend->Fill(zeros, 0));
  autodiff::PauseRecording pause;  // a look at the shapes, not part of any gradient
  return module.Forward(zeros, /*training=*/false).status();
}

absl::Status Module::BuildFor(const Tensor& input) {
  if (built()) return absl::OkStatus();
  // Outside any trace (tf.function's init_scope): a variable made while tracing would be a
  // recorded copy of its initial value, which every replay would write back over its training.
  backend::ScopedTracingBackend outside_the_trace(nullptr);
  SLUICE_RETURN_IF_ERROR(Build(input.shape()));
  return To(input.device());
}

bool Module::built() {
  for (Module* child : Children()) {
    if (!child->built()) return false;
  }
  return true;
}

absl::Status Module::AddLosses(std::vector<Tensor>& losses) {
  for (Module* child : Children()) SLUICE_RETURN_IF_ERROR(child->AddLosses(losses));
  return absl::OkStatus();
}

absl::Status Module::To(const Device& device) {
  for (autodiff::Variable* v : Variables()) {
    absl::Status s = v->MoveTo(device);
    if (!s.ok()) {
      return WithContext(s,
                         absl::StrCat("moving '", v->name(), "' to ", device.DebugString(), ": "));
    }
  }
  return absl::OkStatus();
}

Device Module::device() {
  for (autodiff::Variable* v : Variables()) {
    if (!v->host_resident()) return v->device();
  }
  return Device::Cpu();
}

void BuildOrDie(Module& module, const Shape& input_shape) {
  absl::Status s = module.Build(input_shape);
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", module.name().c_str(), std::string(s.message()).c_str());
    std::abort();
  }
}

std::vector<autodiff::Variable*> ChildVariables(Module& container) {
  std::vector<autodiff::Variable*> vars;
  for (Module* m : container.Children()) {
    for (autodiff::Variable* v : m->Variables()) vars.push_back(v);
  }
  return TrainableFirst(std::move(vars));
}

absl::StatusOr<LayerConfig> Module::GetConfig() {
  return absl::FailedPreconditionError(
      absl::StrCat("layer '", name(),
                   "' has no config, so it cannot be saved: override GetConfig() and "
                   "RegisterLayer() a factory for its class_name"));
}

}  // namespace sluice::train::layers
