// libFuzzer target: ImportOnnxBytes (train/import/onnx_import.h) over a fuzzed ONNX file. Imports
// run with limits that fit the fuzzer's memory. When a file imports, the model is whole: what its
// config sizes it at (layers::LayerSizeFromConfig) is what it holds, and one forward pass on
// zeros of its input's shape runs and outputs what the size says.
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes seed inputs into DIR: small models of
// every built-in layer kind as ExportOnnx writes them. The committed corpus also holds the graphs
// of tests/onnx/make_models.py (ONNX's own helper).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/fuzz_util.h"
#include "train/export/onnx_export.h"
#include "train/import/onnx_import.h"
#include "train/layers/add.h"
#include "train/layers/batch_norm.h"
#include "train/layers/concatenate.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/layer_config.h"
#include "train/layers/max_pool.h"
#include "train/layers/model.h"
#include "train/layers/relu.h"
#include "train/layers/sequential.h"

namespace sluice::train {
namespace {

using fuzz::Check;

// A 2 GB process with ASan: no model may come near it.
const importing::OnnxImportOptions kLimits = {.max_parameters = int64_t{1} << 22,
                                              .max_activation_elements = int64_t{1} << 20,
                                              .max_nodes = 4096};

void CheckImported(layers::Model& model) {
  const Shape input = model.inputs()[0].shape();  // batch 1
  absl::StatusOr<layers::LayerConfig> config = model.GetConfig();
  Check(config.ok());
  absl::StatusOr<layers::LayerSize> size = layers::LayerSizeFromConfig(*config, input);
  Check(size.ok() && size->known);
  int64_t elements = 0;
  for (const autodiff::Variable* v : model.Variables()) elements += v->value().num_elements();
  Check(size->parameters == elements);
  absl::StatusOr<std::vector<Tensor>> out =
      model.Call({Tensor::Zeros(DType::kFloat32, input)}, /*training=*/false);
  Check(out.ok());
  Check((*out)[0].shape() == size->output_shape);
}

void WriteSeeds(const std::string& out) {
  struct Seed {
    const char* name;
    std::unique_ptr<layers::Module> model;
    Shape input;
  };
  std::vector<Seed> seeds;
  seeds.push_back(
      {"mlp",
       std::make_unique<layers::Sequential>(layers::Sequential{
           layers::Flatten(), layers::Dense(4, layers::Activation::kRelu), layers::Dense(3)}),
       Shape{1, 3, 3, 1}});
  seeds.push_back(
      {"cnn",
       std::make_unique<layers::Sequential>(layers::Sequential{
           layers::Conv2D(2, 3, {.conv = {.stride_h = 2, .padding = ops::Padding::kSame}}),
           layers::BatchNorm(), layers::ReLU(), layers::MaxPool(), layers::Flatten(),
           layers::Dense(2)}),
       Shape{1, 6, 5, 2}});
  {
    using layers::Apply;
    layers::SymbolicTensor in = layers::Input({4, 4, 2});
    layers::SymbolicTensor x =
        Apply(layers::Conv2D(2, 3,
                             {.conv = {.padding = ops::Padding::kExplicit,
                                       .pads = {.top = 1, .bottom = 1, .left = 1, .right = 1}}}),
              in);
    layers::SymbolicTensor joined =
        Apply(layers::Concatenate(), {Apply(layers::Add(), {x, in}), x});
    layers::SymbolicTensor y = Apply(layers::Dense(3), Apply(layers::GlobalAvgPool(), joined));
    auto model = layers::Model::Make({in}, {y});
    fuzz::CheckOk(model.status());
    seeds.push_back({"functional", *std::move(model), Shape{1, 4, 4, 2}});
  }
  for (Seed& s : seeds) {
    fuzz::CheckOk(s.model->Build(s.input));
    const std::string path = fuzz::ScratchPath(absl::StrCat(s.name, ".onnx"));
    fuzz::CheckOk(exporting::ExportOnnx(*s.model, s.input, path));
    fuzz::WriteFileOrDie(absl::StrCat(out, "/exported-", s.name), fuzz::ReadFileOrDie(path));
  }
}

}  // namespace
}  // namespace sluice::train

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // parse failures are expected by the thousand
  if (const char* dir = std::getenv("SLUICE_FUZZ_SEEDS")) sluice::train::WriteSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::train;
  absl::StatusOr<std::unique_ptr<layers::Model>> model = importing::ImportOnnxBytes(
      absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx", kLimits);
  if (model.ok()) CheckImported(**model);
  return 0;
}
