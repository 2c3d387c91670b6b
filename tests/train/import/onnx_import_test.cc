// ImportOnnx (train/import/onnx_import.h) on models no one here wrote: graphs written by ONNX's
// own helper (tests/onnx/make_models.py) and torchvision's models exported by torch.onnx.export,
// each checked against ONNX Runtime on the same inputs; the round trip through SaveModel,
// LoadModel and ExportOnnx; and the errors an untrusted file gets.
#include "train/import/onnx_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "onnx/onnx_pb.h"
#include "tests/file_util.h"
#include "tests/onnx_runtime.h"
#include "tests/temp_dir.h"
#include "train/export/onnx_export.h"
#include "train/fit/saved_model.h"
#include "train/layers/activation_layer.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/flatten.h"
#include "train/layers/max_pool.h"
#include "train/layers/sequential.h"
#include "train/layers/summary.h"
#include "train/ops/transpose.h"

namespace sluice::train::importing {
namespace {

using ::sluice::testing::kOnnxDir;
using ::sluice::testing::kPython;
using ::sluice::testing::ReadFile;
using ::sluice::testing::RunOnnxRuntime;
using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::Shell;
using ::sluice::testing::WriteFile;
using ::testing::HasSubstr;

Tensor UniformTensor(const Shape& shape, uint32_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

// tests/onnx/make_models.py `args` writing `path`: its exit status (3: no torch), and output.
int MakeModel(const std::string& args, const std::string& path, std::string* output) {
  return Shell(absl::StrCat(kPython, " '", kOnnxDir, "/make_models.py' ", args, " '", path, "'"),
               output);
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

std::vector<float> Values(const Tensor& t) {
  return {t.flat<float>().begin(), t.flat<float>().end()};
}

// The bar for outputs `reference`: 1e-4, the for trained models (their logits stay near
// 10 at most), or 1e-5 of the largest output where random weights make them larger. float32's
// rounding grows with the values it rounds: resnet50's random logits reach about 270, and the two
// runtimes' sums of them differ by 5e-4 (2e-6 of that).
float Tolerance(const std::vector<float>& reference) {
  float largest = 0;
  for (float v : reference) largest = std::max(largest, std::abs(v));
  return std::max(1e-4f, 1e-5f * largest);
}

// The imported `model`'s output on `nchw` (the ONNX file's layout) against ONNX Runtime's on the
// file, within Tolerance.
void ExpectAgreement(layers::Model& model, const std::string& path, const Tensor& nchw,
                     const std::string& scratch) {
  auto nhwc = ops::Transpose(nchw, {0, 2, 3, 1});
  ASSERT_TRUE(nhwc.ok());
  auto ours = model.Forward(*nhwc, /*training=*/false);
  ASSERT_TRUE(ours.ok()) << ours.status();
  auto theirs = RunOnnxRuntime(path, nchw, scratch);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_LE(MaxAbsDiff(Values(*ours), *theirs), Tolerance(*theirs));
}

TEST(OnnxImportTest, EveryOperatorAgreesWithOnnxRuntime) {
  ScopedTempDir dir;
  const std::string path = dir.path() + "/operators.onnx";
  std::string output;
  ASSERT_EQ(MakeModel("operators", path, &output), 0) << output;
  auto model = ImportOnnx(path);
  ASSERT_TRUE(model.ok()) << model.status();
  // Layers named after their nodes.
  EXPECT_TRUE((*model)->GetLayer("stem.conv").ok());
  EXPECT_TRUE((*model)->GetLayer("head.gap").ok());
  EXPECT_EQ((*model)->name(), "operators");
  // Sigmoid and Tanh as Keras' Activation layer.
  for (const auto& [name, activation] : {std::pair{"block.gate", layers::Activation::kSigmoid},
                                         std::pair{"head.squash", layers::Activation::kTanh}}) {
    absl::StatusOr<layers::Module*> layer = (*model)->GetLayer(name);
    ASSERT_TRUE(layer.ok()) << layer.status();
    auto* activation_layer = dynamic_cast<layers::ActivationLayer*>(*layer);
    ASSERT_NE(activation_layer, nullptr) << name;
    EXPECT_EQ(activation_layer->activation(), activation) << name;
  }
  const Tensor x = UniformTensor(Shape{3, 3, 9, 8}, 1);
  ExpectAgreement(**model, path, x, dir.path());
  // Import, SaveModel, LoadModel, ExportOnnx: ONNX Runtime agrees again.
  const std::string saved = dir.path() + "/saved";
  ASSERT_TRUE(fit::SaveModel(**model, Shape{1, 9, 8, 3}, saved).ok());
  auto loaded = fit::LoadModel(saved);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::string exported = dir.path() + "/exported.onnx";
  ASSERT_TRUE(exporting::ExportOnnx(*loaded->model, Shape{1, 9, 8, 3}, exported).ok());
  auto nhwc = ops::Transpose(x, {0, 2, 3, 1});
  ASSERT_TRUE(nhwc.ok());
  auto ours = loaded->model->Forward(*nhwc, false);
  ASSERT_TRUE(ours.ok()) << ours.status();
  auto again = RunOnnxRuntime(exported, *nhwc, dir.path());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_LE(MaxAbsDiff(Values(*ours), *again), Tolerance(*again));
}

TEST(OnnxImportTest, AnNhwcInputTransposedToNchwIsTakenAsItIs) {
  ScopedTempDir dir;
  const std::string path = dir.path() + "/nhwc.onnx";
  std::string output;
  ASSERT_EQ(MakeModel("nhwc", path, &output), 0) << output;
  auto model = ImportOnnx(path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->inputs()[0].shape(), (Shape{1, 7, 6, 2}));
  const Tensor x = UniformTensor(Shape{2, 7, 6, 2}, 2);
  auto ours = (*model)->Forward(x, false);
  ASSERT_TRUE(ours.ok()) << ours.status();
  auto theirs = RunOnnxRuntime(path, x, dir.path());
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  // ONNX Runtime's output is NCHW [2, 4, 4, 3]; ours NHWC.
  auto theirs_nhwc = ops::Transpose(*Tensor::FromVector(*theirs, Shape{2, 4, 4, 3}), {0, 2, 3, 1});
  EXPECT_LE(MaxAbsDiff(Values(*ours), Values(*theirs_nhwc)), 1e-4f);
}

// torchvision's models, exported for inference (batch norm folded) and for fine-tuning
// (BatchNormalization kept): both import and agree with ONNX Runtime; the imported model
// saves, loads and exports again, and ONNX Runtime agrees with that export too.
class TorchvisionImportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchvisionImportTest, AgreesWithOnnxRuntimeAndRoundTrips) {
  const std::string name = GetParam();
  constexpr int kSize = 64;
  for (const std::string mode : {"inference", "training"}) {
    SCOPED_TRACE(mode);
    ScopedTempDir dir;
    const std::string path = absl::StrCat(dir.path(), "/", name, ".onnx");
    std::string output;
    const int rc =
        MakeModel(absl::StrCat("torchvision ", name, " ", mode, " ", kSize), path, &output);
    if (rc == 3) GTEST_SKIP() << "no torch here: " << output;
    ASSERT_EQ(rc, 0) << output;
    auto model = ImportOnnx(path);
    ASSERT_TRUE(model.ok()) << model.status();
    const Tensor x = UniformTensor(Shape{2, 3, kSize, kSize}, 3);
    ExpectAgreement(**model, path, x, dir.path());
    if (mode == "training") {
      EXPECT_THAT(layers::Summary(**model), HasSubstr("(batch_norm)"));
    }
    // Import, SaveModel, LoadModel, ExportOnnx: ONNX Runtime agrees again.
    const std::string saved = dir.path() + "/saved";
    ASSERT_TRUE(fit::SaveModel(**model, Shape{1, kSize, kSize, 3}, saved).ok());
    auto loaded = fit::LoadModel(saved);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const std::string exported = dir.path() + "/exported.onnx";
    ASSERT_TRUE(exporting::ExportOnnx(*loaded->model, Shape{1, kSize, kSize, 3}, exported).ok());
    auto nhwc = ops::Transpose(x, {0, 2, 3, 1});
    auto ours = loaded->model->Forward(*nhwc, false);
    ASSERT_TRUE(ours.ok()) << ours.status();
    auto again = RunOnnxRuntime(exported, *nhwc, dir.path());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_LE(MaxAbsDiff(Values(*ours), *again), Tolerance(*again));
  }
}

// resnet18 and mobilenet_v2 by default; $SLUICE_TORCHVISION_MODELS (comma-separated) names others,
// as docs/training.md's command for resnet50 does.
std::vector<std::string> TorchvisionModels() {
  const char* env = std::getenv("SLUICE_TORCHVISION_MODELS");
  return absl::StrSplit(env != nullptr && *env != '\0' ? env : "resnet18,mobilenet_v2", ',');
}

INSTANTIATE_TEST_SUITE_P(Models, TorchvisionImportTest, ::testing::ValuesIn(TorchvisionModels()));

// The models imported from `a` and `b` predict the same, bit for bit, and not all zeros, on an
// NHWC input of `shape`.
void ExpectTheSamePredictions(const std::string& a, const std::string& b, const Shape& shape) {
  auto first = ImportOnnx(a);
  auto second = ImportOnnx(b);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  const Tensor x = UniformTensor(shape, 4);
  auto y1 = (*first)->Forward(x, false);
  auto y2 = (*second)->Forward(x, false);
  ASSERT_TRUE(y1.ok() && y2.ok());
  EXPECT_EQ(Values(*y1), Values(*y2));
  EXPECT_GT(MaxAbsDiff(Values(*y1), std::vector<float>(Values(*y1).size(), 0.0f)), 0.0f);
}

// A model saved by ONNX's own save_model with its weights in another file (external data)
// imports with the same weights as the model saved whole: the same predictions, bit for bit.
// Locations outside the model's folder, symbolic links, and offsets or lengths that do not fit
// the file or the tensor are errors naming the tensor.
TEST(OnnxImportTest, WeightsInAnotherFileImportAsTheSameModel) {
  ScopedTempDir dir;
  const std::string whole = dir.path() + "/operators.onnx";
  const std::string external = dir.path() + "/external.onnx";
  std::string output;
  ASSERT_EQ(MakeModel("operators", whole, &output), 0) << output;
  ASSERT_EQ(MakeModel(absl::StrCat("external '", whole, "'"), external, &output), 0) << output;
  ASSERT_TRUE(std::filesystem::exists(external + ".data"));
  ASSERT_LT(std::filesystem::file_size(external), std::filesystem::file_size(whole));
  ExpectTheSamePredictions(whole, external, Shape{2, 9, 8, 3});
  // The bytes alone do not say where the other file is.
  EXPECT_THAT(std::string(ImportOnnxBytes(ReadFile(external), "mem").status().message()),
              HasSubstr("keeps its data in another file, which only ImportOnnx"));

  // The model with its first initializer's external data entry `key` set to `value` (or
  // removed, when `value` is empty): its error.
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ReadFile(external)));
  const std::string first = proto.graph().initializer(0).name();
  auto error_with = [&](const std::string& key, const std::string& value) {
    onnx::ModelProto edited = proto;
    auto* entries = edited.mutable_graph()->mutable_initializer(0)->mutable_external_data();
    for (auto& e : *entries) {
      if (e.key() == key) e.set_value(value);
    }
    const std::string path = dir.path() + "/edited.onnx";
    WriteFile(path, edited.SerializeAsString());
    return std::string(ImportOnnx(path).status().message());
  };
  const std::string tensor = absl::StrCat("tensor '", first, "'");
  EXPECT_THAT(error_with("location", "../external.onnx.data"),
              HasSubstr(tensor + ": external data location '../external.onnx.data' is not a "
                                 "relative path inside the model's folder"));
  EXPECT_THAT(error_with("location", dir.path() + "/external.onnx.data"),
              HasSubstr("is not a relative path inside the model's folder"));
  EXPECT_THAT(error_with("location", "missing.data"), HasSubstr(tensor + ": external data: "));
  EXPECT_THAT(error_with("offset", "999999"), HasSubstr("runs past the end of"));
  EXPECT_THAT(error_with("offset", "-1"),
              HasSubstr("external data offset '-1' is not a byte count"));
  EXPECT_THAT(error_with("length", "4"), HasSubstr("external data length 4, its dims take"));
  std::filesystem::create_symlink(external + ".data", dir.path() + "/link.data");
  EXPECT_THAT(error_with("location", "link.data"),
              HasSubstr("is a symbolic link, which is not followed"));
}

// A weight two nodes share imports for both (the importer releases a constant after its last
// use): the same predictions as the graph with the weight given twice.
// A model sluice exported imports back as the same model: its NHWC input read as NHWC (it was
// read as NCHW, an mlp's [28, 28, 1] input becoming [28, 1, 28]), and the Transpose to NHWC it
// writes before its Flatten taken as a name, not a move (it was refused).
TEST(OnnxImportTest, AModelSluiceExportedImportsBackAsItself) {
  using layers::Activation;
  ScopedTempDir dir;
  for (const bool conv : {false, true}) {
    SCOPED_TRACE(conv ? "cnn" : "mlp");
    layers::Sequential model =
        conv ? layers::Sequential{layers::Conv2D(4, 3, Activation::kRelu), layers::MaxPool2D(2),
                                  layers::Flatten(), layers::Dense(5)}
             : layers::Sequential{layers::Flatten(), layers::Dense(6, Activation::kRelu),
                                  layers::Dense(5)};
    const Shape input{1, 9, 8, 2};
    ASSERT_TRUE(model.Build(input).ok());
    const std::string path = absl::StrCat(dir.path(), conv ? "/cnn.onnx" : "/mlp.onnx");
    ASSERT_TRUE(exporting::ExportOnnx(model, input, path).ok());
    auto imported = ImportOnnx(path);
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_EQ((*imported)->inputs()[0].shape(), (Shape{1, 9, 8, 2}));
    const Tensor x = UniformTensor(Shape{3, 9, 8, 2}, 5);
    auto ours = model.Forward(x, false);
    auto theirs = (*imported)->Forward(x, false);
    ASSERT_TRUE(ours.ok() && theirs.ok()) << theirs.status();
    EXPECT_LE(MaxAbsDiff(Values(*ours), Values(*theirs)), 1e-5f);
  }
}

TEST(OnnxImportTest, AWeightTwoNodesShareServesBoth) {
  ScopedTempDir dir;
  std::string output;
  for (const bool shared : {true, false}) {
    const std::string path = dir.path() + (shared ? "/shared.onnx" : "/twice.onnx");
    const int rc = Shell(
        absl::StrCat(
            kPython,
            " -c 'import sys; import numpy as np; from onnx import helper, numpy_helper, "
            "TensorProto, save; w = np.random.default_rng(3).standard_normal((3, 3, 3, 3))"
            ".astype(np.float32); second = \"w\" if sys.argv[2] == \"1\" else \"w2\"; "
            "inits = [numpy_helper.from_array(w, \"w\")] + ([] if second == \"w\" else "
            "[numpy_helper.from_array(w, \"w2\")]); "
            "nodes = [helper.make_node(\"Conv\", [\"x\", \"w\"], [\"a\"], pads=[1, 1, 1, 1], "
            "name=\"c1\"), helper.make_node(\"Relu\", [\"a\"], [\"b\"], name=\"r\"), "
            "helper.make_node(\"Conv\", [\"b\", second], [\"y\"], pads=[1, 1, 1, 1], "
            "name=\"c2\")]; g = helper.make_graph(nodes, \"g\", "
            "[helper.make_tensor_value_info(\"x\", TensorProto.FLOAT, [1, 3, 5, 5])], "
            "[helper.make_tensor_value_info(\"y\", TensorProto.FLOAT, [1, 3, 5, 5])], inits); "
            "save(helper.make_model(g), sys.argv[1])' '",
            path, "' ", shared ? "1" : "0"),
        &output);
    ASSERT_EQ(rc, 0) << output;
  }
  ExpectTheSamePredictions(dir.path() + "/shared.onnx", dir.path() + "/twice.onnx",
                           Shape{1, 5, 5, 3});
}

TEST(OnnxImportTest, AFileThatIsNotAModelIsAnErrorNamingIt) {
  ScopedTempDir dir;
  EXPECT_EQ(ImportOnnx(dir.path() + "/missing.onnx").status().code(), absl::StatusCode::kNotFound);
  const std::string path = dir.path() + "/operators.onnx";
  std::string output;
  ASSERT_EQ(MakeModel("operators", path, &output), 0) << output;
  const std::string bytes = ReadFile(path);
  // Cut short: not a ModelProto, or one whose weights are shorter than their dims say.
  for (size_t keep : {bytes.size() / 2, bytes.size() - 3}) {
    WriteFile(dir.path() + "/cut.onnx", bytes.substr(0, keep));
    const absl::Status status = ImportOnnx(dir.path() + "/cut.onnx").status();
    EXPECT_FALSE(status.ok()) << keep;
    EXPECT_THAT(std::string(status.message()), HasSubstr("cut.onnx"));
  }
  // Limits, checked before anything is allocated.
  const absl::Status weights = ImportOnnx(path, {.max_parameters = 100}).status();
  EXPECT_EQ(weights.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(weights.message()), HasSubstr("max_parameters"));
  EXPECT_EQ(ImportOnnx(path, {.max_activation_elements = 100}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ImportOnnx(path, {.max_file_bytes = 100}).status().code(),
            absl::StatusCode::kResourceExhausted);
  // A height that no convolution can take.
  EXPECT_FALSE(ImportOnnx(path, {.height = 1, .width = 1}).ok());
  // Another size for the fully convolutional part is fine up to the Gemm, which then disagrees.
  EXPECT_THAT(std::string(ImportOnnx(path, {.height = 17}).status().message()),
              HasSubstr("node '/fc/Gemm' (Gemm): its weight takes 60 features"));
}

TEST(OnnxImportTest, AnUnsupportedOperatorIsNamedWithItsNodeAndTheFile) {
  ScopedTempDir dir;
  const std::string path = dir.path() + "/softplus.onnx";
  std::string output;
  const int rc =
      Shell(absl::StrCat(kPython,
                         " -c 'import sys; from onnx import helper, TensorProto, save; "
                         "g = helper.make_graph([helper.make_node(\"Softplus\", [\"x\"], [\"y\"], "
                         "name=\"squash\")], \"g\", "
                         "[helper.make_tensor_value_info(\"x\", TensorProto.FLOAT, [1, 4])], "
                         "[helper.make_tensor_value_info(\"y\", TensorProto.FLOAT, [1, 4])]); "
                         "save(helper.make_model(g), sys.argv[1])' '",
                         path, "'"),
            &output);
  ASSERT_EQ(rc, 0) << output;
  const absl::Status status = ImportOnnx(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("softplus.onnx: node 'squash' (Softplus): this operator is not imported"));
}

}  // namespace
}  // namespace sluice::train::importing
