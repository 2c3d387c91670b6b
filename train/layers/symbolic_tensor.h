#ifndef SLUICE_TRAIN_LAYERS_SYMBOLIC_TENSOR_H_
#define SLUICE_TRAIN_LAYERS_SYMBOLIC_TENSOR_H_

#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/shape.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

struct FunctionalNode;

// Keras' KerasTensor: what Input and Apply return while a functional model is declared
// (model.h). It holds no data: the node that makes it and that node's output shape. Copies share
// the node.
class SymbolicTensor {
 public:
  SymbolicTensor() = default;
  explicit SymbolicTensor(std::shared_ptr<const FunctionalNode> node) : node_(std::move(node)) {}

  // The shape with a batch dimension of 1, the size the graph was declared with (Summary prints
  // it as None). Empty when !ok().
  const Shape& shape() const;
  // OK, or the first error on the way to this tensor: a layer that cannot take its inputs' shapes,
  // named. Model::Make returns it; Apply passes it on without calling the layer.
  const absl::Status& status() const;
  bool ok() const { return status().ok(); }
  const std::shared_ptr<const FunctionalNode>& node() const { return node_; }

 private:
  std::shared_ptr<const FunctionalNode> node_;
};

// One node of a functional graph: an input, or one call of a layer on earlier nodes' outputs. A
// layer applied twice (a shared layer) has two nodes and one set of variables.
struct FunctionalNode {
  std::shared_ptr<Module> layer;  // null for an input
  std::vector<SymbolicTensor> inputs;
  std::string input_name;  // an input's name
  Shape shape;             // the output's, batch dimension 1
  absl::Status status;
};

// "(None, 28, 28, 1)": `shape` with its batch dimension printed as Keras prints an unknown batch
// (Summary, and the errors of functional models).
std::string BatchShapeString(const Shape& shape);

// keras.Input(shape, name): a model input of `shape` without the batch dimension (Input({28, 28,
// 1}) for Fashion-MNIST images). Without a name, Model::Make names it "input", "input_1", ...
SymbolicTensor Input(const Shape& shape, std::string name = "");

// Keras' layer(x): calls `layer` on `inputs` (one, or several for Add, Concatenate, Multiply)
// and returns its output. The call runs now, on zeros of batch 1, unrecorded, to learn the
// output's shape and to build a lazy layer's variables (as Keras builds a functional model's
// layers when they are called). Pass the same shared_ptr again to share the layer and its
// variables. `name` sets the layer's layer_name(): Model::GetLayer finds it by that name, and its
// variables are named "<name>/...". A layer that cannot take the inputs' shapes gives a tensor
// whose status() names the layer and the shapes.
SymbolicTensor Apply(std::shared_ptr<Module> layer, const std::vector<SymbolicTensor>& inputs,
                     std::string name = "");
inline SymbolicTensor Apply(std::shared_ptr<Module> layer, const SymbolicTensor& input,
                            std::string name = "") {
  return Apply(std::move(layer), std::vector<SymbolicTensor>{input}, std::move(name));
}
// A layer by value, moved into the graph: Apply(Dense(10), x).
template <typename M>
requires(std::derived_from<std::remove_cvref_t<M>, Module> &&
         !std::is_lvalue_reference_v<M>) SymbolicTensor
    Apply(M&& layer, const SymbolicTensor& input, std::string name = "") {
  return Apply(std::make_shared<std::remove_cvref_t<M>>(std::move(layer)), input, std::move(name));
}
template <typename M>
requires(std::derived_from<std::remove_cvref_t<M>, Module> &&
         !std::is_lvalue_reference_v<M>) SymbolicTensor
    Apply(M&& layer, const std::vector<SymbolicTensor>& inputs, std::string name = "") {
  return Apply(std::make_shared<std::remove_cvref_t<M>>(std::move(layer)), inputs, std::move(name));
}

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_SYMBOLIC_TENSOR_H_
