#include "train/export/onnx_export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/idx_file.h"
#include "onnx/onnx_pb.h"
#include "tests/file_util.h"
#include "tests/onnx_runtime.h"
#include "tests/temp_dir.h"
#include "train/fit/trainer.h"
#include "train/layers/activation.h"
#include "train/layers/activation_layer.h"
#include "train/layers/add.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/concatenate.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/max_pool.h"
#include "train/layers/model.h"
#include "train/layers/multiply.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/layers/zero_padding2d.h"
#include "train/models/model_zoo.h"
#include "train/ops/arithmetic.h"
#include "train/optimizers/adam.h"

namespace sluice::train::exporting {
namespace {

using ::sluice::testing::CheckerErrors;
using ::sluice::testing::ReadFile;
using ::sluice::testing::RunOnnxRuntime;
using ::sluice::testing::ScopedTempDir;
using ::testing::HasSubstr;

constexpr char kFashionMnist[] = "/usr/share/datasets/fashion-mnist";
Tensor Uniform(const Shape& shape, uint32_t seed, float lo, float hi) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

std::vector<float> Values(const Tensor& t) {
  return {t.flat<float>().begin(), t.flat<float>().end()};
}

// The largest absolute difference, and how many rows' arg-max differ where sluice's two best
// logits are more than `margin` apart (closer ones may swap within the tolerance).
struct Agreement {
  float max_abs_diff = 0;
  int64_t top1_differs = 0;
  int64_t rows = 0;
};

Agreement Compare(const std::vector<float>& ours, const std::vector<float>& theirs, int64_t classes,
                  float margin) {
  Agreement a;
  EXPECT_EQ(ours.size(), theirs.size());
  if (ours.size() != theirs.size() || classes <= 0) return a;
  a.rows = static_cast<int64_t>(ours.size()) / classes;
  for (size_t i = 0; i < ours.size(); ++i) {
    a.max_abs_diff = std::max(a.max_abs_diff, std::abs(ours[i] - theirs[i]));
  }
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = ours.data() + r * classes;
    const float* y = theirs.data() + r * classes;
    const int64_t ax = std::max_element(x, x + classes) - x;
    const int64_t ay = std::max_element(y, y + classes) - y;
    std::vector<float> sorted(x, x + classes);
    std::sort(sorted.rbegin(), sorted.rend());
    if (ax != ay && (classes < 2 || sorted[0] - sorted[1] > margin)) ++a.top1_differs;
  }
  return a;
}

std::set<std::string> OpTypes(const onnx::ModelProto& model) {
  std::set<std::string> ops;
  for (const onnx::NodeProto& node : model.graph().node()) ops.insert(node.op_type());
  return ops;
}

TEST(OnnxExportTest, EveryBuiltInModelHasANamedNhwcInputAndADynamicBatch) {
  for (const std::string& name : models::ModelNames()) {
    for (bool recompute : {false, true}) {
      if (recompute && !models::IsResNet(name)) continue;
      SCOPED_TRACE(name + (recompute ? " with recompute" : ""));
      auto model = models::MakeModel(name, {.height = 28, .width = 28, .channels = 1}, 3,
                                     {.recompute = recompute});
      ASSERT_TRUE(model.ok()) << model.status();
      ASSERT_TRUE((*model)->Build(Shape{1, 28, 28, 1}).ok());
      auto proto = ToOnnx(**model, Shape{32, 28, 28, 1});
      ASSERT_TRUE(proto.ok()) << proto.status();
      EXPECT_EQ(proto->opset_import(0).version(), 13);
      EXPECT_EQ(proto->producer_name(), "sluice");
      const onnx::GraphProto& graph = proto->graph();
      ASSERT_EQ(graph.input_size(), 1);
      ASSERT_EQ(graph.output_size(), 1);
      EXPECT_EQ(graph.input(0).name(), "input");
      EXPECT_EQ(graph.output(0).name(), "output");
      const auto& in = graph.input(0).type().tensor_type().shape();
      ASSERT_EQ(in.dim_size(), 4);
      EXPECT_EQ(in.dim(0).dim_param(), "batch");
      EXPECT_EQ(in.dim(1).dim_value(), 28);
      EXPECT_EQ(in.dim(2).dim_value(), 28);
      EXPECT_EQ(in.dim(3).dim_value(), 1);
      const auto& out = graph.output(0).type().tensor_type().shape();
      ASSERT_EQ(out.dim_size(), 2);
      EXPECT_EQ(out.dim(0).dim_param(), "batch");
      EXPECT_EQ(out.dim(1).dim_value(), 10);
      // Every weight is an initializer, once, under its own name; host-resident counters (Dropout's
      // call count) are not weights.
      std::set<std::string> initializers;
      for (const onnx::TensorProto& t : graph.initializer()) initializers.insert(t.name());
      size_t weights = 0;
      for (autodiff::Variable* v : (*model)->Variables()) {
        if (v->host_resident()) continue;
        ++weights;
        EXPECT_EQ(initializers.count(v->name()), 1u) << v->name();
      }
      EXPECT_EQ(initializers.size(), weights);
      const std::set<std::string> ops = OpTypes(*proto);
      EXPECT_EQ(ops.count("Gemm"), 1u);
      if (name == "mlp") {
        EXPECT_EQ(ops.count("Conv"), 0u);
      }
      if (name == "cnn") {
        EXPECT_EQ(ops.count("MaxPool"), 1u);
      }
      if (name == "resnet-small") {
        EXPECT_EQ(ops.count("BatchNormalization"), 1u);
        EXPECT_EQ(ops.count("Add"), 1u);
        EXPECT_EQ(ops.count("GlobalAveragePool"), 1u);
      }
      // One transpose into NCHW for a convolutional model, none back (pooling flattens).
      int transposes = 0;
      for (const onnx::NodeProto& node : graph.node()) transposes += node.op_type() == "Transpose";
      EXPECT_EQ(transposes, name == "mlp" ? 0 : name == "cnn" ? 2 : 1);
    }
  }
}

TEST(OnnxExportTest, TheCheckerAcceptsEveryBuiltInModel) {
  ScopedTempDir dir;
  for (const std::string& name : models::ModelNames()) {
    SCOPED_TRACE(name);
    auto model = models::MakeModel(name, {.height = 32, .width = 24, .channels = 3}, 5);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE((*model)->Build(Shape{1, 32, 24, 3}).ok());
    const std::string path = dir.path() + "/" + name + ".onnx";
    ASSERT_TRUE(ExportOnnx(**model, Shape{1, 32, 24, 3}, path).ok());
    EXPECT_EQ(CheckerErrors(path), "");
  }
}

// Every layer and activation the exporter knows, with random weights and moving statistics, on
// random inputs: ONNX Runtime's output against Forward(training = false).
TEST(OnnxExportTest, OnnxRuntimeAgreesOnEveryLayerKind) {
  auto model = std::make_unique<layers::Sequential>();
  using layers::Activation;
  model->Add(std::make_unique<layers::Conv2D>(
      6, layers::KernelSize(3, 3),
      layers::Conv2DLayerOptions{
          .conv = {.stride_h = 2, .stride_w = 1, .padding = ops::Padding::kSame},
          .seed = 1,
          .activation = Activation::kTanh}));
  model->Add(std::make_unique<layers::BatchNorm>());
  model->Add(std::make_unique<layers::AvgPool>(ops::Pool2DOptions{
      .window_h = 3, .window_w = 3, .stride_h = 2, .stride_w = 2, .padding = ops::Padding::kSame}));
  model->Add(std::make_unique<layers::Conv2D>(
      8, layers::KernelSize(3, 2),
      layers::Conv2DLayerOptions{.conv = {.stride_h = 1,
                                          .stride_w = 1,
                                          .dilation_h = 2,
                                          .dilation_w = 1,
                                          .padding = ops::Padding::kValid},
                                 .seed = 2,
                                 .activation = Activation::kGelu}));
  model->Add(
      std::make_unique<layers::ResidualBlock>(8, 8, layers::ResidualBlockOptions{.seed = 4}));
  model->Add(std::make_unique<layers::ResidualBlock>(
      8, 12, layers::ResidualBlockOptions{.stride = 2, .seed = 5}));
  model->Add(std::make_unique<layers::MaxPool>(ops::Pool2DOptions{
      .window_h = 2, .window_w = 2, .stride_h = 1, .stride_w = 1, .padding = ops::Padding::kSame}));
  model->Add(std::make_unique<layers::Conv2D>(
      4, layers::KernelSize(1, 1),
      layers::Conv2DLayerOptions{.seed = 3, .activation = Activation::kSoftmax}));
  model->Add(std::make_unique<layers::Flatten>());
  model->Add(
      std::make_unique<layers::Dense>(16, Activation::kSigmoid, layers::DenseOptions{.seed = 6}));
  model->Add(std::make_unique<layers::Dropout>(0.5f, 7));
  model->Add(std::make_unique<layers::BatchNorm>());
  model->Add(std::make_unique<layers::ReLU>());
  model->Add(
      std::make_unique<layers::Dense>(5, Activation::kSoftmax, layers::DenseOptions{.seed = 8}));
  const Shape input_shape{1, 21, 17, 3};
  ASSERT_TRUE(model->Build(input_shape).ok());
  // Moving statistics away from 0 and 1, and the batch norms' gamma and beta too, so that a
  // wrong statistic or epsilon shows.
  uint32_t seed = 100;
  for (autodiff::Variable* v : model->Variables()) {
    const std::string& name = v->name();
    if (name.find("moving_variance") != std::string::npos ||
        name.find("gamma") != std::string::npos) {
      v->mutable_value() = Uniform(v->value().shape(), ++seed, 0.5f, 1.5f);
    } else if (name.find("moving_mean") != std::string::npos ||
               name.find("beta") != std::string::npos) {
      v->mutable_value() = Uniform(v->value().shape(), ++seed, -0.3f, 0.3f);
    }
  }
  const Tensor x = Uniform(Shape{7, 21, 17, 3}, 9, -1, 1);
  auto expected = model->Forward(x, /*training=*/false);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ScopedTempDir dir;
  const std::string path = dir.path() + "/all_layers.onnx";
  ASSERT_TRUE(ExportOnnx(*model, input_shape, path).ok());
  EXPECT_EQ(CheckerErrors(path), "");
  auto got = RunOnnxRuntime(path, x, dir.path());
  ASSERT_TRUE(got.ok()) << got.status();
  const Agreement a = Compare(Values(*expected), *got, 5, 2e-5f);
  EXPECT_LE(a.max_abs_diff, 1e-5f);
  EXPECT_EQ(a.top1_differs, 0);
}

// A functional graph: a convolution shared by two calls, a skip connection (Add) between NCHW
// values, a Multiply, a Concatenate along the channels, and a head.
TEST(OnnxExportTest, OnnxRuntimeAgreesOnAFunctionalModel) {
  using layers::Apply;
  using layers::SymbolicTensor;
  SymbolicTensor in = layers::Input({9, 7, 3});
  SymbolicTensor x =
      Apply(layers::Conv2D(4, 3, {.conv = {.padding = ops::Padding::kSame}, .seed = 1}), in);
  auto shared = std::make_shared<layers::Conv2D>(
      4, 3,
      layers::Conv2DLayerOptions{.conv = {.padding = ops::Padding::kSame},
                                 .seed = 2,
                                 .activation = layers::Activation::kTanh});
  SymbolicTensor y = Apply(shared, Apply(shared, x));
  SymbolicTensor sum = Apply(layers::Add(), {x, y});
  SymbolicTensor product = Apply(layers::Multiply(), {sum, Apply(layers::ReLU(), x)});
  SymbolicTensor joined = Apply(layers::Concatenate(), {product, in, sum});
  SymbolicTensor pooled = Apply(layers::GlobalAvgPool(), joined, "pool");
  SymbolicTensor flat =
      Apply(layers::Flatten(), Apply(layers::MaxPool(ops::Pool2DOptions{}), joined));
  SymbolicTensor out = Apply(layers::Dense(5, layers::DenseOptions{.seed = 3}),
                             layers::Apply(layers::Concatenate(), {pooled, flat}));
  auto model = layers::Model::Make({in}, {out});
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor input = Uniform(Shape{4, 9, 7, 3}, 9, -1, 1);
  auto expected = (*model)->Forward(input, /*training=*/false);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ScopedTempDir dir;
  const std::string path = dir.path() + "/functional.onnx";
  ASSERT_TRUE(ExportOnnx(**model, Shape{1, 9, 7, 3}, path).ok());
  EXPECT_EQ(CheckerErrors(path), "");
  auto proto = ToOnnx(**model, Shape{1, 9, 7, 3});
  ASSERT_TRUE(proto.ok());
  EXPECT_THAT(OpTypes(*proto), ::testing::IsSupersetOf({"Add", "Mul", "Concat"}));
  int shared_kernels = 0;
  for (const onnx::TensorProto& t : proto->graph().initializer()) {
    shared_kernels += t.name() == "conv2d_1/kernel" ? 1 : 0;
  }
  EXPECT_EQ(shared_kernels, 1);  // written once, read by both calls
  auto got = RunOnnxRuntime(path, input, dir.path());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LE(Compare(Values(*expected), *got, 5, 2e-5f).max_abs_diff, 1e-5f);
}

// The layers functional graphs need (issue 47), each exported as its ONNX form:
// DepthwiseConv2D as a Conv with group = channels, grouped Conv2D, ZeroPadding2D as Pad, ReLU6 as
// Clip, a leaky ReLU as LeakyRelu and the general ReLU composed, Reshape, and GlobalMaxPool.
// ONNX Runtime's output against Forward.
TEST(OnnxExportTest, OnnxRuntimeAgreesOnTheFunctionalGraphLayers) {
  using layers::Activation;
  auto model = std::make_unique<layers::Sequential>();
  model->Add(std::make_unique<layers::ZeroPadding2D>(std::pair<int64_t, int64_t>{1, 2},
                                                     std::pair<int64_t, int64_t>{0, 3}));
  model->Add(std::make_unique<layers::DepthwiseConv2D>(
      layers::KernelSize(3), layers::DepthwiseConv2DOptions{.strides = {2, 1},
                                                            .padding = ops::Padding::kSame,
                                                            .depth_multiplier = 2,
                                                            .seed = 1,
                                                            .activation = Activation::kTanh}));
  model->Add(std::make_unique<layers::ReLU>(layers::ReLUOptions{.max_value = 0.5f}));
  model->Add(std::make_unique<layers::Conv2D>(
      8, layers::KernelSize(3, 2),
      layers::Conv2DLayerOptions{.conv = {.padding = ops::Padding::kSame, .groups = 2},
                                 .seed = 2}));
  model->Add(std::make_unique<layers::ReLU>(layers::ReLUOptions{.negative_slope = 0.1f}));
  model->Add(std::make_unique<layers::DepthwiseConv2D>(
      layers::KernelSize(2, 3),
      layers::DepthwiseConv2DOptions{.dilation_rate = {2, 1}, .use_bias = false, .seed = 3}));
  model->Add(std::make_unique<layers::ReLU>(
      layers::ReLUOptions{.max_value = 0.3f, .negative_slope = 0.2f, .threshold = 0.05f}));
  model->Add(
      std::make_unique<layers::GlobalMaxPool>(layers::GlobalMaxPoolOptions{.keepdims = true}));
  model->Add(std::make_unique<layers::Reshape>(std::vector<int64_t>{2, -1}));
  model->Add(std::make_unique<layers::Flatten>());
  model->Add(
      std::make_unique<layers::Dense>(4, Activation::kLinear, layers::DenseOptions{.seed = 4}));
  const Shape input_shape{1, 9, 8, 3};
  ASSERT_TRUE(model->Build(input_shape).ok());
  // Biases away from 0, so that a misplaced one shows.
  uint32_t seed = 200;
  for (autodiff::Variable* v : model->Variables()) {
    if (v->name().find("bias") != std::string::npos) {
      v->mutable_value() = Uniform(v->value().shape(), ++seed, -0.3f, 0.3f);
    }
  }
  const Tensor x = Uniform(Shape{5, 9, 8, 3}, 10, -1, 1);
  auto expected = model->Forward(x, /*training=*/false);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ScopedTempDir dir;
  const std::string path = dir.path() + "/functional_layers.onnx";
  ASSERT_TRUE(ExportOnnx(*model, input_shape, path).ok());
  EXPECT_EQ(CheckerErrors(path), "");
  absl::StatusOr<onnx::ModelProto> proto = ToOnnx(*model, input_shape);
  ASSERT_TRUE(proto.ok()) << proto.status();
  for (const char* op :
       {"Pad", "Conv", "Clip", "LeakyRelu", "Greater", "GlobalMaxPool", "Reshape"}) {
    EXPECT_TRUE(OpTypes(*proto).contains(op)) << op;
  }
  int grouped = 0;
  for (const onnx::NodeProto& node : proto->graph().node()) {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "group" && a.i() > 1) ++grouped;
    }
  }
  EXPECT_EQ(grouped, 3);
  auto got = RunOnnxRuntime(path, x, dir.path());
  ASSERT_TRUE(got.ok()) << got.status();
  const Agreement a = Compare(Values(*expected), *got, 4, 2e-5f);
  EXPECT_LE(a.max_abs_diff, 1e-5f);
  EXPECT_EQ(a.top1_differs, 0);
}

// Keras' Activation layer, each activation, as the ONNX nodes Dense's and Conv2D's activation=
// writes: between convolutions (the graph NCHW there, so softmax is over ONNX's axis 1, the
// channels) and on a Dense's output. ONNX Runtime's output against Forward.
TEST(OnnxExportTest, OnnxRuntimeAgreesOnEveryActivationLayer) {
  using layers::Activation;
  using layers::ActivationLayer;
  auto model = std::make_unique<layers::Sequential>();
  model->Add(std::make_unique<layers::Conv2D>(
      5, 3, layers::Conv2DLayerOptions{.conv = {.padding = ops::Padding::kSame}, .seed = 1}));
  model->Add(std::make_unique<ActivationLayer>(Activation::kSigmoid));
  model->Add(std::make_unique<layers::Conv2D>(
      4, 3, layers::Conv2DLayerOptions{.conv = {.padding = ops::Padding::kSame}, .seed = 2}));
  model->Add(std::make_unique<ActivationLayer>(Activation::kSoftmax));
  model->Add(std::make_unique<layers::Conv2D>(4, 1, layers::Conv2DLayerOptions{.seed = 3}));
  model->Add(std::make_unique<ActivationLayer>(Activation::kTanh));
  model->Add(std::make_unique<ActivationLayer>(Activation::kGelu));
  model->Add(std::make_unique<ActivationLayer>(Activation::kRelu));
  model->Add(std::make_unique<ActivationLayer>(Activation::kLinear));
  model->Add(std::make_unique<layers::Flatten>());
  model->Add(std::make_unique<layers::Dense>(6, layers::DenseOptions{.seed = 4}));
  model->Add(std::make_unique<ActivationLayer>(Activation::kSoftmax));
  const Shape input_shape{1, 6, 5, 3};
  ASSERT_TRUE(model->Build(input_shape).ok());
  const Tensor x = Uniform(Shape{4, 6, 5, 3}, 11, -2, 2);
  auto expected = model->Forward(x, /*training=*/false);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ScopedTempDir dir;
  const std::string path = dir.path() + "/activations.onnx";
  ASSERT_TRUE(ExportOnnx(*model, input_shape, path).ok());
  EXPECT_EQ(CheckerErrors(path), "");
  absl::StatusOr<onnx::ModelProto> proto = ToOnnx(*model, input_shape);
  ASSERT_TRUE(proto.ok()) << proto.status();
  int softmax_on_channels = 0;
  for (const onnx::NodeProto& node : proto->graph().node()) {
    if (node.op_type() != "Softmax") continue;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "axis" && a.i() == 1) ++softmax_on_channels;
    }
  }
  EXPECT_EQ(softmax_on_channels, 1);
  EXPECT_THAT(OpTypes(*proto),
              ::testing::IsSupersetOf({"Sigmoid", "Softmax", "Tanh", "Erf", "Relu", "Gemm"}));
  auto got = RunOnnxRuntime(path, x, dir.path());
  ASSERT_TRUE(got.ok()) << got.status();
  const Agreement a = Compare(Values(*expected), *got, 6, 2e-5f);
  EXPECT_EQ(a.rows, 4);
  EXPECT_LE(a.max_abs_diff, 1e-5f);
}

// The first `n` Fashion-MNIST images of `split` ("train" or "t10k") scaled to [0, 1] as
// `sluice train` feeds them, [n, 28, 28, 1], and their labels.
Element FashionMnist(const std::string& split, int64_t n) {
  auto images = ReadIdxFile(absl::StrCat(kFashionMnist, "/", split, "-images-idx3-ubyte.gz"));
  auto labels = ReadIdxFile(absl::StrCat(kFashionMnist, "/", split, "-labels-idx1-ubyte.gz"));
  EXPECT_TRUE(images.ok() && labels.ok())
      << "Fashion-MNIST (Debian's dataset-fashion-mnist, which tools/setup.sh installs)";
  if (!images.ok() || !labels.ok()) return {};
  Tensor x(DType::kFloat32, Shape{n, 28, 28, 1});
  std::vector<int64_t> y(n);
  float* px = x.data<float>();
  for (int64_t i = 0; i < n * 28 * 28; ++i) {
    px[i] = static_cast<uint8_t>(images->data[i]) / 255.0f;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(labels->data[i]);
  return {x, Tensor::FromVector(y)};
}

// The test: each built-in model, trained (briefly, so that its weights and batch-norm
// statistics are a trained model's), exported; ONNX Runtime gives the same top-1 as Forward on
// 1,000 Fashion-MNIST test images, with logits within 1e-4.
TEST(OnnxExportTest, OnnxRuntimeAgreesWithEveryTrainedBuiltInModel) {
  const Element train = FashionMnist("train", 256);
  const Element test = FashionMnist("t10k", 1000);
  ASSERT_EQ(test.size(), 2u);
  ScopedTempDir dir;
  for (const std::string& name : models::ModelNames()) {
    SCOPED_TRACE(name);
    auto model = models::MakeModel(name, {.height = 28, .width = 28, .channels = 1}, 11);
    ASSERT_TRUE(model.ok()) << model.status();
    optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.002f});
    fit::Trainer trainer(**model, adam);
    auto history = trainer.Fit(Dataset::FromTensorSlices(train).Batch(64), {.epochs = 1});
    ASSERT_TRUE(history.ok()) << history.status();

    auto logits = (*model)->Forward(test[0], /*training=*/false);
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::string path = absl::StrCat(dir.path(), "/", name, ".onnx");
    ASSERT_TRUE(ExportOnnx(**model, Shape{1, 28, 28, 1}, path).ok());
    EXPECT_EQ(CheckerErrors(path), "");
    auto got = RunOnnxRuntime(path, test[0], dir.path());
    ASSERT_TRUE(got.ok()) << got.status();
    const Agreement a = Compare(Values(*logits), *got, 10, 2e-4f);
    EXPECT_EQ(a.rows, 1000);
    EXPECT_LE(a.max_abs_diff, 1e-4f);
    EXPECT_EQ(a.top1_differs, 0);
    std::printf(
        "[ onnx     ] %s: 1000 images, max |logit difference| %.3g, top-1 differs on %lld\n",
        name.c_str(), a.max_abs_diff, static_cast<long long>(a.top1_differs));
  }
}

// A layer sluice has no ONNX form for.
class Doubler : public layers::Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool) override { return input; }
  std::string name() const override { return "doubler"; }
};

TEST(OnnxExportTest, AUsersOwnLayerIsUnimplementedNamingIt) {
  layers::Sequential model;
  model.Add(std::make_unique<layers::Flatten>()).Add(std::make_unique<Doubler>());
  auto proto = ToOnnx(model, Shape{1, 4, 4, 1});
  EXPECT_EQ(proto.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(proto.status().message(), HasSubstr("1/doubler"));
}

// A user's own container whose layers run one after another exports when the options name it.
class BaseWithHead : public layers::Module {
 public:
  BaseWithHead() {
    base_.Add(std::make_unique<layers::Flatten>());
    head_ = std::make_unique<layers::Dense>(16, 3);
  }
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override {
    SLUICE_ASSIGN_OR_RETURN(Tensor features, base_.Forward(input, training));
    return head_->Forward(features, training);
  }
  std::string name() const override { return "base_with_head"; }
  std::vector<layers::Module*> Children() override { return {&base_, head_.get()}; }

 private:
  layers::Sequential base_;
  std::unique_ptr<layers::Dense> head_;
};

TEST(OnnxExportTest, AUsersOwnSequentialContainerExportsWhenNamed) {
  BaseWithHead model;
  EXPECT_EQ(ToOnnx(model, Shape{1, 4, 4, 1}).status().code(), absl::StatusCode::kUnimplemented);
  auto proto = ToOnnx(model, Shape{1, 4, 4, 1}, {.sequential_layers = {"base_with_head"}});
  ASSERT_TRUE(proto.ok()) << proto.status();
  EXPECT_EQ(OpTypes(*proto), (std::set<std::string>{"Flatten", "Gemm", "Identity"}));
  EXPECT_EQ(proto->graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 3);
}

// A user's own layer with a weight: y = x * scale + 1 per channel (NHWC, channels last).
class ScaleShift : public layers::Module {
 public:
  explicit ScaleShift(int64_t channels)
      : scale_(Uniform(Shape{channels}, 21, 0.5f, 2.0f), "scale_shift/scale") {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool) override {
    SLUICE_ASSIGN_OR_RETURN(Tensor scaled, ops::Mul(input, scale_.value()));
    return ops::Add(scaled, Tensor::Scalar<float>(1.0f));
  }
  std::string name() const override { return "scale_shift"; }
  std::vector<autodiff::Variable*> Variables() override { return {&scale_}; }
  autodiff::Variable& scale() { return scale_; }

 private:
  autodiff::Variable scale_;
};

// Its ONNX form, as a user writes it: the input in sluice's NHWC order (the graph may hold it
// NCHW after a convolution), then Mul by the weight and Add of a constant.
absl::StatusOr<OnnxValue> ScaleShiftToOnnx(layers::Module& layer, OnnxGraph& graph,
                                           const OnnxValue& input) {
  auto& self = dynamic_cast<ScaleShift&>(layer);
  const OnnxValue x = graph.ToNhwc(input);
  SLUICE_ASSIGN_OR_RETURN(const std::string scale, graph.Weight(self.scale()));
  const std::string scaled = graph.Node("Mul", {x.name, scale})->output(0);
  const std::string out = graph.Node("Add", {scaled, graph.Constant("one", 1.0f)})->output(0);
  return OnnxValue{out, x.dims, false};
}

TEST(OnnxExportTest, AUsersOwnLayerExportsThroughItsHookAndOnnxRuntimeAgrees) {
  layers::Sequential model;
  model
      .Add(std::make_unique<layers::Conv2D>(4, layers::KernelSize(3),
                                            layers::Conv2DLayerOptions{.seed = 3}))
      .Add(std::make_unique<ScaleShift>(4))
      .Add(std::make_unique<layers::Flatten>())
      .Add(std::make_unique<layers::Dense>(3, layers::Activation::kLinear,
                                           layers::DenseOptions{.seed = 4}));
  const Shape input_shape{1, 6, 5, 2};
  ASSERT_TRUE(model.Build(input_shape).ok());
  const Tensor x = Uniform(Shape{5, 6, 5, 2}, 8, -1, 1);
  auto expected = model.Forward(x, /*training=*/false);
  ASSERT_TRUE(expected.ok()) << expected.status();

  const OnnxExportOptions options{.custom_layers = {{"scale_shift", ScaleShiftToOnnx}}};
  auto proto = ToOnnx(model, input_shape, options);
  ASSERT_TRUE(proto.ok()) << proto.status();
  // Named after the layer's path, as the built-in layers' nodes are.
  const auto& nodes = proto->graph().node();
  EXPECT_TRUE(std::any_of(nodes.begin(), nodes.end(), [](const onnx::NodeProto& n) {
    return n.op_type() == "Mul" && n.name().rfind("1/scale_shift/Mul", 0) == 0;
  }));
  ScopedTempDir dir;
  const std::string path = dir.path() + "/custom.onnx";
  ASSERT_TRUE(ExportOnnx(model, input_shape, path, options).ok());
  EXPECT_EQ(CheckerErrors(path), "");
  auto got = RunOnnxRuntime(path, x, dir.path());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LE(Compare(Values(*expected), *got, 3, 2e-5f).max_abs_diff, 1e-5f);
}

TEST(OnnxExportTest, AHookThatFailsIsNamedWithItsLayer) {
  layers::Sequential model;
  model.Add(std::make_unique<layers::Flatten>()).Add(std::make_unique<ScaleShift>(16));
  ASSERT_TRUE(model.Build(Shape{1, 4, 4, 1}).ok());
  auto failing = [](layers::Module&, OnnxGraph& graph,
                    const OnnxValue&) -> absl::StatusOr<OnnxValue> {
    return absl::InvalidArgumentError(absl::StrCat("no form at ", graph.path()));
  };
  auto proto = ToOnnx(model, Shape{1, 4, 4, 1}, {.custom_layers = {{"scale_shift", failing}}});
  EXPECT_EQ(proto.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(proto.status().message(),
              HasSubstr("layer '1/scale_shift' (scale_shift): no form at 1/scale_shift"));
}

TEST(OnnxExportTest, AnUnbuiltModelOrABadShapeIsAnError) {
  layers::Sequential model;
  model.Add(std::make_unique<layers::Dense>(3));
  auto unbuilt = ToOnnx(model, Shape{1, 4});
  EXPECT_EQ(unbuilt.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unbuilt.status().message(), HasSubstr("not built"));
  EXPECT_EQ(ToOnnx(model, Shape{4}).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(model.Build(Shape{1, 4}).ok());
  EXPECT_EQ(ToOnnx(model, Shape{1, 4}, {.output_name = "input"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Dense after an image without a Flatten.
  EXPECT_EQ(ToOnnx(model, Shape{1, 2, 2, 1}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnnxExportTest, TheFileIsWrittenWholeOrNotAtAll) {
  layers::Sequential model;
  model.Add(std::make_unique<layers::Dense>(4, 3));
  ScopedTempDir dir;
  const std::string path = dir.path() + "/m.onnx";
  ASSERT_TRUE(ExportOnnx(model, Shape{1, 4}, path).ok());
  onnx::ModelProto read;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(read.ParseFromIstream(&in));
  EXPECT_EQ(read.graph().initializer_size(), 2);
  // A failed export leaves the old file as it was, and no temporary file beside it.
  layers::Sequential unbuilt;
  unbuilt.Add(std::make_unique<layers::Dense>(3));
  EXPECT_FALSE(ExportOnnx(unbuilt, Shape{1, 4}, path).ok());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
  EXPECT_EQ(ExportOnnx(model, Shape{1, 4}, dir.path() + "/no/such/dir/m.onnx").code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::train::exporting
