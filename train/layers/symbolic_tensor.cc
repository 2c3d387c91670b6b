#include "train/layers/symbolic_tensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_context.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"

namespace sluice::train::layers {
namespace {

const Shape& EmptyShape() {
  static const Shape* shape = new Shape();
  return *shape;
}

const absl::Status& NoGraph() {
  static const absl::Status* status =
      new absl::Status(absl::FailedPreconditionError("an empty SymbolicTensor (made by no Input)"));
  return *status;
}

std::shared_ptr<const FunctionalNode> Failed(std::shared_ptr<Module> layer,
                                             std::vector<SymbolicTensor> inputs,
                                             absl::Status status) {
  auto node = std::make_shared<FunctionalNode>();
  node->layer = std::move(layer);
  node->inputs = std::move(inputs);
  node->status = std::move(status);
  return node;
}

}  // namespace

std::string BatchShapeString(const Shape& shape) {
  std::vector<std::string> dims = {"None"};
  for (int i = 1; i < shape.rank(); ++i) dims.push_back(absl::StrCat(shape.dim(i)));
  return absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
}

const Shape& SymbolicTensor::shape() const {
  return node_ != nullptr && node_->status.ok() ? node_->shape : EmptyShape();
}

const absl::Status& SymbolicTensor::status() const {
  return node_ != nullptr ? node_->status : NoGraph();
}

SymbolicTensor Input(const Shape& shape, std::string name) {
  auto node = std::make_shared<FunctionalNode>();
  node->input_name = std::move(name);
  std::vector<int64_t> dims = {1};
  dims.insert(dims.end(), shape.dims().begin(), shape.dims().end());
  node->shape = Shape(dims);
  return SymbolicTensor(std::move(node));
}

SymbolicTensor Apply(std::shared_ptr<Module> layer, const std::vector<SymbolicTensor>& inputs,
                     std::string name) {
  if (layer == nullptr) {
    return SymbolicTensor(
        Failed(nullptr, inputs, absl::InvalidArgumentError("Apply: a null layer")));
  }
  if (!name.empty()) {
    if (!layer->layer_name().empty() && layer->layer_name() != name) {
      return SymbolicTensor(Failed(
          layer, inputs,
          absl::InvalidArgumentError(absl::StrCat("Apply: the layer '", layer->layer_name(),
                                                  "' cannot be named '", name, "' as well"))));
    }
    layer->set_layer_name(std::move(name));
  }
  const std::string label = layer->layer_name().empty()
                                ? layer->name()
                                : absl::StrCat("'", layer->layer_name(), "' (", layer->name(), ")");
  if (inputs.empty()) {
    return SymbolicTensor(Failed(
        layer, inputs, absl::InvalidArgumentError(absl::StrCat(label, ": called on no input"))));
  }
  for (const SymbolicTensor& in : inputs) {
    if (!in.ok()) return SymbolicTensor(Failed(layer, inputs, in.status()));
  }
  // The call on zeros: a look at the shapes, on the layer's device once it has variables.
  const Device device = layer->built() ? layer->device() : Device::Cpu();
  std::vector<Tensor> zeros;
  std::vector<std::string> shapes;
  absl::StatusOr<Tensor> y = absl::UnknownError("not called");
  {
    absl::StatusOr<backend::Backend*> backend = backend::BackendFor(device);
    if (!backend.ok()) return SymbolicTensor(Failed(layer, inputs, backend.status()));
    for (const SymbolicTensor& in : inputs) {
      shapes.push_back(BatchShapeString(in.shape()));
      absl::StatusOr<Tensor> z = (*backend)->Allocate(DType::kFloat32, in.shape());
      if (z.ok()) {
        absl::Status filled = (*backend)->Fill(*z, 0);
        if (!filled.ok()) z = filled;
      }
      if (!z.ok()) return SymbolicTensor(Failed(layer, inputs, z.status()));
      zeros.push_back(*std::move(z));
    }
    autodiff::PauseRecording pause;
    y = layer->ForwardInputs(zeros, /*training=*/false);
  }
  if (!y.ok()) {
    return SymbolicTensor(
        Failed(layer, inputs,
               WithContext(y.status(),
                           absl::StrCat(label, " on inputs ", absl::StrJoin(shapes, ", "), ": "))));
  }
  auto node = std::make_shared<FunctionalNode>();
  node->layer = std::move(layer);
  node->inputs = inputs;
  node->shape = y->shape();
  return SymbolicTensor(std::move(node));
}

}  // namespace sluice::train::layers
