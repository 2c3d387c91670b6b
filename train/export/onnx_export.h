#ifndef SLUICE_TRAIN_EXPORT_ONNX_EXPORT_H_
#define SLUICE_TRAIN_EXPORT_ONNX_EXPORT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/shape.h"
#include "train/layers/module.h"

namespace onnx {
class ModelProto;
class NodeProto;
}  // namespace onnx

namespace sluice::train::autodiff {
class Variable;
}  // namespace sluice::train::autodiff

namespace sluice::train::exporting {

// A tensor of the graph being written: its name, and its shape in sluice's terms (NHWC for
// images; dims[0] is the batch, which is dynamic). `nchw`: the graph holds it as NCHW (ONNX's
// layout, kept between convolutions); ToNhwc gives it in sluice's order.
struct OnnxValue {
  std::string name;
  std::vector<int64_t> dims;
  bool nchw = false;
};

// What a user's own layer writes its ONNX form with (OnnxExportOptions::custom_layers, as
// tf2onnx's custom op handlers). Include "onnx/onnx_pb.h" (Debian's libonnx-dev) to set a
// node's attributes.
class OnnxGraph {
 public:
  virtual ~OnnxGraph() = default;
  // Appends a node of ONNX operator `op` (default domain) reading `inputs` by name; its one
  // output is node->output(0), named after the layer's path.
  virtual onnx::NodeProto* Node(const std::string& op, std::vector<std::string> inputs) = 0;
  // A float32 initializer holding `variable`'s value (read through the backend, so a model on
  // any device exports), transposed by `perm` when given; returns its name.
  virtual absl::StatusOr<std::string> Weight(autodiff::Variable& variable,
                                             const std::vector<int>& perm = {}) = 0;
  // A float32 scalar initializer named `name` (written once however often it is asked for).
  virtual std::string Constant(const std::string& name, float value) = 0;
  // `value` in sluice's order (NHWC), or in ONNX's (NCHW, for rank 4), transposing if needed.
  virtual OnnxValue ToNhwc(const OnnxValue& value) = 0;
  virtual OnnxValue ToNchw(const OnnxValue& value) = 0;
  // Writes `child` (any layer with an ONNX form, a built-in one or another custom one) on `in`.
  virtual absl::StatusOr<OnnxValue> Layer(layers::Module& child, const OnnxValue& in) = 0;
  // The layer's path in the model ("1/noisy_dense"), for names and errors.
  virtual const std::string& path() const = 0;
};

// Writes `layer`'s inference-mode computation on `input` into `graph` and returns its output.
using OnnxLayerExporter = std::function<absl::StatusOr<OnnxValue>(
    layers::Module& layer, OnnxGraph& graph, const OnnxValue& input)>;

// How ExportOnnx writes the graph.
struct OnnxExportOptions {
  std::string input_name = "input";
  std::string output_name = "output";
  // The default opset's version. 13 is read by every current runtime (ONNX Runtime, TensorRT,
  // OpenVINO) and has every operator the built-in layers need.
  int64_t opset = 13;
  // The graph's name, and the producer's version in the file.
  std::string graph_name = "sluice_model";
  std::string producer_version;
  // The name() of a user's own containers whose Children() run one after another in inference,
  // as in keras.Sequential (a base with a head): exported as their children.
  std::vector<std::string> sequential_layers;
  // A user's own layers' ONNX forms, by the layer's name(): each writes its nodes through an
  // OnnxGraph. A layer of a user's own that is in neither list has no ONNX form.
  std::map<std::string, OnnxLayerExporter> custom_layers;
  // A classifier's output classes, in order: written as the model's metadata_props entry
  // "class_names", one name per line, which ImportOnnx reads back (so `sluice predict` of an
  // imported model names its classes). Empty: none written.
  std::vector<std::string> class_names;
};

// The model as an ONNX graph in inference mode (Keras' model.export, tf2onnx): the input is
// float32 NHWC as in training, [batch, H, W, C] of `input_shape` with a dynamic batch dimension
// named "batch", and the output is what Forward(x, training = false) returns.
//   Dense -> Gemm; Conv2D -> Conv (the kernel transposed from HWIO to OIHW, "same" padding as
//   explicit pads computed as TensorFlow does); BatchNorm -> BatchNormalization with the moving
//   statistics; MaxPool/AvgPool -> MaxPool/AveragePool; GlobalAvgPool -> GlobalAveragePool +
//   Flatten; ReLU and activations -> Relu, Sigmoid, Tanh, Softmax, Gelu as Erf; Dropout -> nothing;
//   Flatten -> Flatten of the NHWC order (as Keras flattens); ResidualBlock -> its convolutions,
//   batch norms and the Add; Sequential and Recompute -> their layers.
// Between convolutions the graph keeps NCHW (ONNX's layout), with one Transpose in and one out.
// The model must be built; its variables are read through the backend, so a model on any device
// exports. A layer with no ONNX form (a user's own, unless listed in sequential_layers or
// custom_layers) is Unimplemented naming it and its path.
absl::StatusOr<onnx::ModelProto> ToOnnx(layers::Module& model, const Shape& input_shape,
                                        const OnnxExportOptions& options = {});

// ToOnnx written to `path`, through a temporary file renamed into place.
absl::Status ExportOnnx(layers::Module& model, const Shape& input_shape, const std::string& path,
                        const OnnxExportOptions& options = {});

}  // namespace sluice::train::exporting

#endif  // SLUICE_TRAIN_EXPORT_ONNX_EXPORT_H_
