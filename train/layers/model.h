#ifndef SLUICE_TRAIN_LAYERS_MODEL_H_
#define SLUICE_TRAIN_LAYERS_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/layers/module.h"
#include "train/layers/symbolic_tensor.h"

namespace sluice::train::layers {

// keras.Model(inputs, outputs), Keras' functional API: the graph of layer calls that leads from
// `inputs` (Input) to `outputs` (Apply): skip connections, several inputs and outputs, shared
// layers. It is an ordinary Module: it trains with Fit, saves with SaveModel, exports with
// ExportOnnx and prints with Summary.
//
//   SymbolicTensor in = Input({32, 32, 3}, "image");
//   SymbolicTensor x = Apply(Conv2D(16, 3, Activation::kRelu), in);
//   SymbolicTensor y = Apply(Conv2D(16, 3, {.conv = {.padding = ops::Padding::kSame}}), x);
//   SymbolicTensor sum = Apply(Add(), {x, y});
//   SymbolicTensor out = Apply(Dense(10), Apply(GlobalAvgPool(), sum, "pool"));
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Make({in}, {out}));
//
// Every layer has a name unique in the model: the one given to Apply, else its kind numbered in
// the order of the calls ("conv2d", "conv2d_1"). Its variables are named "<layer name>/<name>"
// ("conv2d_1/kernel"). A layer's error names it: "layer 'conv2d_1' (conv2d): ...".
class Model : public Module {
 public:
  // The model of every layer call on the way from `inputs` to `outputs`. InvalidArgument for an
  // output that needs an input not in `inputs`, an input listed twice, two layers of one name,
  // and the first error of a tensor (SymbolicTensor::status).
  static absl::StatusOr<std::unique_ptr<Model>> Make(std::vector<SymbolicTensor> inputs,
                                                     std::vector<SymbolicTensor> outputs,
                                                     std::string name = "functional");

  // A model of one input and one output.
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  // One input per Input, in order; a model of one output.
  absl::StatusOr<Tensor> ForwardInputs(const std::vector<Tensor>& inputs, bool training) override;
  // Every output, in order. Each input must have its Input's shape; the batch may be any size.
  absl::StatusOr<std::vector<Tensor>> Call(const std::vector<Tensor>& inputs, bool training);

  std::string name() const override { return name_; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  std::vector<autodiff::Variable*> Variables() override { return ChildVariables(*this); }
  // Each layer once, in the order of its first call.
  std::vector<Module*> Children() override;
  bool built() override { return true; }
  // A functional model is built when made: OK when `input_shape` is the first input's (any
  // batch), else InvalidArgument.
  absl::Status Build(const Shape& input_shape) override;

  // The layer named `name` (NotFound listing the names otherwise).
  absl::StatusOr<Module*> GetLayer(absl::string_view name);
  // Keras' model.get_layer(name).output: the output of the layer's call, from which a new model
  // continues or ends (Model::Make(base.inputs(), {*base.LayerOutput("pool")}) is the base
  // without its top; it shares the layers and their variables). InvalidArgument for a layer
  // called more than once in this model.
  absl::StatusOr<SymbolicTensor> LayerOutput(absl::string_view name);
  const std::vector<SymbolicTensor>& inputs() const { return inputs_; }
  const std::vector<SymbolicTensor>& outputs() const { return outputs_; }

  // The graph in the order it runs, each node after its inputs: what Summary and ExportOnnx walk.
  struct Step {
    std::shared_ptr<const FunctionalNode> node;
    Module* layer;            // null for an input
    int input_index = -1;     // which input, for an input
    std::vector<int> inputs;  // the steps whose outputs it takes
    std::string name;         // the layer's (or the input's) name
    const char* label;        // "layer 'conv2d_1' (conv2d)", interned for the profiler
  };
  const std::vector<Step>& steps() const { return steps_; }
  // The steps of the outputs, in order.
  const std::vector<int>& output_steps() const { return output_steps_; }

 private:
  Model() = default;

  std::string name_;
  std::vector<SymbolicTensor> inputs_, outputs_;
  std::vector<Step> steps_;
  std::vector<int> output_steps_;
  std::vector<int> last_use_;    // the last step that reads each step's output
  std::vector<Module*> layers_;  // each once, in the order of first call
};

// LayerFromConfig's and LayerSizeFromConfig's functions for class "Functional", the config that
// Model::GetConfig writes (registered with the built-in layers). Unlike other layers', the
// factory builds the model, calling each layer on zeros of batch 1: size an untrusted config
// first (LoadModel does), as the size lists every input and every call's output.
absl::StatusOr<std::unique_ptr<Module>> FunctionalFromConfig(const LayerConfig& config);
absl::StatusOr<LayerSize> FunctionalSize(const LayerConfig& config, const Shape& input_shape);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MODEL_H_
