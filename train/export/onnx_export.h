#ifndef SLUICE_TRAIN_EXPORT_ONNX_EXPORT_H_
#define SLUICE_TRAIN_EXPORT_ONNX_EXPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/shape.h"
#include "train/layers/module.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace sluice::train::exporting {

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
  // as in keras.Sequential (a base with a head): exported as their children. Any other layer of
  // a user's own has no ONNX form.
  std::vector<std::string> sequential_layers;
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
// exports. A layer with no ONNX form (a user's own, unless listed in sequential_layers) is
// Unimplemented naming it and its path.
absl::StatusOr<onnx::ModelProto> ToOnnx(layers::Module& model, const Shape& input_shape,
                                        const OnnxExportOptions& options = {});

// ToOnnx written to `path`, through a temporary file renamed into place.
absl::Status ExportOnnx(layers::Module& model, const Shape& input_shape, const std::string& path,
                        const OnnxExportOptions& options = {});

}  // namespace sluice::train::exporting

#endif  // SLUICE_TRAIN_EXPORT_ONNX_EXPORT_H_
