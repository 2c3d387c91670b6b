#ifndef SLUICE_TRAIN_LAYERS_RECOMPUTE_H_
#define SLUICE_TRAIN_LAYERS_RECOMPUTE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

// tf.recompute_grad (gradient checkpointing): trades compute for memory. Under a tape, the
// wrapped module's forward pass runs unrecorded, so none of its intermediate activations are
// kept; the tape records one op from the block's input and the module's trainable variables to
// its output. When the backward pass reaches that op, it runs the wrapped Forward again on the
// kept input, on a fresh tape of its own, and takes the gradients of the output (seeded with the
// incoming gradient) with respect to the input and those variables. What stays alive between the
// forward and the backward pass is the block's input and output only; the activations inside it
// exist only while its own backward runs.
//
// The gradients are the very ones the wrapped module gives without Recompute (the same kernels in
// the same order: bit for bit on the CPU). The recomputation starts from the state the forward
// pass started from: every non-trainable variable of the wrapped module (Dropout's call counter,
// BatchNorm's moving statistics) is saved before the forward pass, put back for the
// recomputation and then set back to what the forward pass left. So Dropout draws the same mask
// twice and BatchNorm's moving statistics move once per step. Frozen variables get no gradient.
//
// Everything but Forward is the wrapped module's: Variables() (and so checkpoints: a model saves
// and loads the same with or without Recompute), name(), Build(), built(); Children() is the
// wrapped module, so set_trainable, regularisation losses and Summary reach it. A lazy module is
// built by the first call, unrecorded, and its new variables then join the recorded op.
//
// Pieces of a forward pass are recomputed with RecomputeGrad below, at a finer grain than a whole
// module: Sequential::RecomputeLayers (a range of layers) and ResidualBlock's `recompute` option
// (each conv -> batch norm pair) use it.
//
// Limits: gradients flow to the input and to the wrapped module's own variables, not to a
// variable it reads but does not own (tf.recompute_grad's `variables` argument). The wrapped
// Forward must be deterministic given the input, its variables and its non-trainable state. The
// module must outlive the tape's Gradient() call, which calls it. Without an active, unpaused tape
// (inference, evaluation) Forward simply calls the wrapped Forward.
class Recompute : public Module {
 public:
  explicit Recompute(std::unique_ptr<Module> module);

  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return module_->name(); }
  std::vector<autodiff::Variable*> Variables() override { return module_->Variables(); }
  std::vector<Module*> Children() override { return {module_.get()}; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  absl::Status Build(const Shape& input_shape) override { return module_->Build(input_shape); }
  bool built() override { return module_->built(); }

  Module& module() { return *module_; }

 private:
  std::unique_ptr<Module> module_;
};

// The function form of tf.recompute_grad, under the rules above: `forward(input, training)`,
// whose activations are recomputed in the backward pass instead of kept. `modules` are the
// modules whose variables `forward` reads (their trainable variables get gradients, their
// non-trainable ones are its state, saved and restored); `forward` must read no other variable.
// `name` labels errors of the recomputation (copied only when the call is recorded). Without an
// active tape, or while a module is not yet built, it simply calls `forward`. `forward` is called
// again from the tape's Gradient(), so what it refers to must live until then. Recompute::Forward
// is RecomputeGrad on its module.
using RecomputeFn = std::function<absl::StatusOr<Tensor>(const Tensor& input, bool training)>;
absl::StatusOr<Tensor> RecomputeGrad(absl::string_view name, std::vector<Module*> modules,
                                     const Tensor& input, bool training, RecomputeFn forward);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_RECOMPUTE_H_
