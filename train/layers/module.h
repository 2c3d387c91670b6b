#ifndef SLUICE_TRAIN_LAYERS_MODULE_H_
#define SLUICE_TRAIN_LAYERS_MODULE_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "train/autodiff/variable.h"

namespace sluice::train::layers {

// A layer: owns its variables. `training` is passed on every call, as Keras'
// call(x, training=...), so that no hidden mode flag can disagree between a
// container and its children (Dropout and BatchNorm behave differently).
// Forward ops are recorded by any active Tape.
class Module {
 public:
  virtual ~Module() = default;
  virtual absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) = 0;
  // Variables an optimizer updates, in a stable order.
  virtual std::vector<autodiff::Variable*> TrainableVariables() { return {}; }
  // Every variable the module owns (trainable first, then e.g. BatchNorm's moving mean and
  // variance), in a stable order, with unique names: what a checkpoint saves.
  virtual std::vector<autodiff::Variable*> Variables() { return TrainableVariables(); }

  // Moves every variable to `device` (Keras builds a model under a device scope; PyTorch's
  // module.to(device)). Host-resident counters stay. Inputs must then be on that device too.
  absl::Status To(const Device& device) {
    for (autodiff::Variable* v : Variables()) {
      absl::Status s = v->MoveTo(device);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("moving '", v->name(), "' to ",
                                                   device.DebugString(), ": ", s.message()));
      }
    }
    return absl::OkStatus();
  }
  // Where the variables live: the first one's device that is not host-resident, else the CPU.
  Device device() {
    for (autodiff::Variable* v : Variables()) {
      if (!v->host_resident()) return v->device();
    }
    return Device::Cpu();
  }
};

// Prepends `prefix` to the name of every variable `module` owns, so that a
// container's variables stay unique ("0/dense/kernel", "1/dense/kernel").
// Variables keep their identity (addresses) and values.
inline void PrefixVariableNames(Module& module, absl::string_view prefix) {
  for (autodiff::Variable* v : module.Variables()) v->set_name(absl::StrCat(prefix, v->name()));
}

// The variables of `children`, trainable ones first, each group in the
// children's order: the Variables() of a container.
inline std::vector<autodiff::Variable*> TrainableFirst(std::vector<autodiff::Variable*> vars) {
  std::stable_partition(vars.begin(), vars.end(),
                        [](autodiff::Variable* v) { return v->trainable(); });
  return vars;
}

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MODULE_H_
