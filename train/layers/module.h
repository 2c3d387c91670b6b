#ifndef SLUICE_TRAIN_LAYERS_MODULE_H_
#define SLUICE_TRAIN_LAYERS_MODULE_H_

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "train/autodiff/variable.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {

// A layer: owns its variables. `training` is passed on every call, as Keras'
// call(x, training=...), so that no hidden mode flag can disagree between a
// container and its children (Dropout and BatchNorm behave differently).
// Forward ops are recorded by any active Tape.
//
// A layer may create its variables when it first sees an input (Keras' build): Dense(units)
// learns its input size from the first call, or from Build(input_shape) before it. A custom
// layer that does so overrides Build() and built(), creates its variables there once, and
// names them uniquely; its Forward calls Build when !built().
class Module {
 public:
  virtual ~Module() = default;
  virtual absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) = 0;
  // The call of a layer in a functional model (model.h), which may take several inputs. Layers
  // of several inputs (Add, Concatenate) override it; the default is Forward on the one input,
  // and InvalidArgument naming the layer for any other count.
  virtual absl::StatusOr<Tensor> ForwardInputs(const std::vector<Tensor>& inputs, bool training);
  // Whether ForwardRelu runs this layer and a ReLU after it as one kernel (a Dense or Conv2D of
  // a bias and a linear activation, a BatchNorm): Sequential then calls it for the layer and a
  // plain ReLU after it.
  virtual bool FusesRelu() const { return false; }
  // Forward, then max(x, 0), with the values and gradients of the two layers. The default runs
  // the two.
  virtual absl::StatusOr<Tensor> ForwardRelu(const Tensor& input, bool training);

  // The layer's kind in summaries and errors ("dense", "conv2d"): Keras' layer names without
  // the numbering, which containers add ("0/dense").
  virtual std::string name() const { return "layer"; }
  // Keras' layer.name: this layer's own name in a functional model ("conv2d_3", or one the user
  // gave), which prefixes its variables' names there and which Model::GetLayer finds. Empty
  // until a functional model or the user names it.
  const std::string& layer_name() const { return layer_name_; }
  void set_layer_name(std::string layer_name) { layer_name_ = std::move(layer_name); }

  // Keras' get_config(): the arguments that make this layer again (LayerFromConfig), for a saved
  // model. Every built-in layer has one; a user's own layer overrides it and registers a factory
  // (RegisterLayer) to be saved and loaded without its code. The default is FailedPrecondition
  // naming the layer.
  virtual absl::StatusOr<LayerConfig> GetConfig();
  // Every variable the module owns (trainable first, then e.g. BatchNorm's moving mean and
  // variance), in a stable order, with unique names: what a checkpoint saves. Empty until built.
  virtual std::vector<autodiff::Variable*> Variables() { return {}; }
  // The modules a container calls, in order (Summary, freezing and regularisation walk them).
  virtual std::vector<Module*> Children() { return {}; }

  // The variables an optimizer updates: those of Variables() that are trainable and not frozen,
  // in the same order.
  std::vector<autodiff::Variable*> TrainableVariables();
  // The rest of Variables(): moving statistics, counters, and frozen weights.
  std::vector<autodiff::Variable*> NonTrainableVariables();

  // Keras' layer.trainable = false: freezes every variable of this module and its children
  // (no gradients, no optimizer slots; a frozen BatchNorm normalises with its moving
  // statistics, as in Keras), including variables a lazy layer creates later. true unfreezes.
  void set_trainable(bool trainable);
  // false after set_trainable(false) (or when every weight is frozen, as after loading a
  // checkpoint saved so).
  bool trainable();

  // Keras' build(input_shape): creates the variables for inputs of `input_shape` (batch
  // dimension included) and nothing when already built. The default runs Forward once on zeros
  // of that shape (batch 1) with training = false, on the CPU, so that a container builds every
  // lazy layer inside it. Move the model to a device (To) after building it.
  virtual absl::Status Build(const Shape& input_shape);
  // Whether every variable exists. The default: every child is built.
  virtual bool built();
  // What a lazy layer's Forward calls first: when not built, Build for `input`'s shape and move
  // the new variables to `input`'s device.
  absl::Status BuildFor(const Tensor& input);

  // Keras' model.losses: the regularisation penalties of this module and its children, as
  // float32 scalars on the variables' device, recorded by an active tape. Fit adds them to the
  // loss.
  virtual absl::Status AddLosses(std::vector<Tensor>& losses);

  // Moves every variable to `device` (Keras builds a model under a device scope; PyTorch's
  // module.to(device)). Host-resident counters stay. Inputs must then be on that device too.
  absl::Status To(const Device& device);
  // Where the variables live: the first one's device that is not host-resident, else the CPU.
  Device device();

 protected:
  // For lazy layers: the frozen flag a variable created now starts with.
  bool trainable_flag() const { return trainable_; }

 private:
  bool trainable_ = true;
  std::string layer_name_;
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

// Calls `module` once, unrecorded and with training = false, on zeros of `input_shape` with a
// batch of 1 on `device`: Build's default, and how Summary learns every output shape.
absl::Status CallOnZeros(Module& module, const Shape& input_shape, const Device& device);

// For the explicit-size constructors (Dense(in, units), ...), which cannot return a status:
// builds `module` for `input_shape` on the CPU, where creating a variable cannot fail, and dies
// with the message if it does.
void BuildOrDie(Module& module, const Shape& input_shape);

// The Variables() of a container: its children's, trainable ones first.
std::vector<autodiff::Variable*> ChildVariables(Module& container);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MODULE_H_
