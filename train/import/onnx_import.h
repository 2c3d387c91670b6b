#ifndef SLUICE_TRAIN_IMPORT_ONNX_IMPORT_H_
#define SLUICE_TRAIN_IMPORT_ONNX_IMPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/layers/model.h"

namespace sluice::train::importing {

// What ImportOnnx accepts from a file, which it does not trust: every count and size is checked
// against these before anything is allocated for it.
struct OnnxImportOptions {
  // The input's height and width, for a file that leaves them free (a dim_param) or to run a
  // fully convolutional network at another size than it was exported at; 0: the file's.
  int64_t height = 0;
  int64_t width = 0;
  // The model's name (Summary, errors); "": the ONNX graph's name.
  std::string name;
  int64_t max_file_bytes = (int64_t{1} << 31) - 1;  // protobuf's own limit
  // Weight elements in all (16 GiB of float32), and elements of one example's input and of each
  // layer's output (1 GiB of float32), as LoadModelOptions.
  int64_t max_parameters = int64_t{1} << 32;
  int64_t max_activation_elements = int64_t{1} << 28;
  // Nodes in the graph.
  int64_t max_nodes = int64_t{1} << 20;
};

// Builds a functional model (layers::Model) from an ONNX file, with its weights: the graph of a
// common CNN as PyTorch (torch.onnx.export) or tf2onnx writes it, for inference or with its
// BatchNormalization nodes kept for fine-tuning. The model runs in sluice's layout: its input is
// NHWC ([batch, height, width, channels]) where the file's is NCHW (a file whose input is NHWC
// and transposed to NCHW first, as tf2onnx writes Keras models, takes NHWC as it is), and a 4-D
// output is NHWC. Weights are transposed once, here (OIHW to HWIO; a Gemm after a Flatten of an
// image has its rows reordered for the NHWC flattening).
//
// Operators: Conv (dilations, pads, strides, groups: MobileNet's depthwise), BatchNormalization,
// Relu, Clip(0, max) (ReLU6), Add, Mul, Concat, MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool, Gemm, MatMul, Flatten, Reshape to [batch, features], Pad (zeros, spatial),
// Transpose NHWC to NCHW on the input, Identity, Dropout and Constant. Layers
// are named after their nodes ("layer1/layer1.0/conv1"), so GetLayer and LayerOutput find them.
//
// Weights kept in other files (ONNX's external data, as models over protobuf's 2 GiB are saved:
// onnx.save_model(..., save_as_external_data=True)) are read from the model's folder: a location
// must be a relative path inside it, not through a symbolic link, and each tensor's offset and
// length must lie within its file and match its dims. Their SHA-1 checksums are not checked.
//
// Errors name the file and, for a node, its name and operator: an unsupported operator or
// attribute is Unimplemented, never imported partially; a malformed file is InvalidArgument; a
// missing one NotFound; one over a limit ResourceExhausted.
absl::StatusOr<std::unique_ptr<layers::Model>> ImportOnnx(const std::string& path,
                                                          const OnnxImportOptions& options = {});
// The same, and the class names the file carries into `class_names`: its metadata_props entry
// "class_names", one per line, as ExportOnnx writes them (empty when the file has none).
absl::StatusOr<std::unique_ptr<layers::Model>> ImportOnnx(const std::string& path,
                                                          const OnnxImportOptions& options,
                                                          std::vector<std::string>* class_names);
// The same from the file's bytes; `source` names them in errors. A model with external data
// needs ImportOnnx, which knows the folder.
absl::StatusOr<std::unique_ptr<layers::Model>> ImportOnnxBytes(
    absl::string_view bytes, const std::string& source, const OnnxImportOptions& options = {});

}  // namespace sluice::train::importing

#endif  // SLUICE_TRAIN_IMPORT_ONNX_IMPORT_H_
