// The functional API (train/layers/model.h, symbolic_tensor.h): graphs with skip connections,
// shared layers, several inputs and outputs; names; cutting a model at an inner layer; errors;
// saving, sizing and loading; Summary; training.
#include "train/layers/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/gradient_check.h"
#include "tests/train/layers/overfit_test_util.h"
#include "tests/train/module_gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/fit/saved_model.h"
#include "train/layers/add.h"
#include "train/layers/concatenate.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/multiply.h"
#include "train/layers/relu.h"
#include "train/layers/sequential.h"
#include "train/layers/summary.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/reduce.h"
#include "train/optimizers/adam.h"

namespace sluice::train::layers {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::Names;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void ExpectNear(const Tensor& a, const Tensor& b, float tolerance = 1e-6f) {
  ASSERT_EQ(a.shape(), b.shape());
  const std::vector<float> x = Values(a), y = Values(b);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], tolerance) << "element " << i;
}

TEST(MergeLayersTest, AddMultiplyAndConcatenateComputeWhatKerasDoes) {
  const Tensor a = T({1, 2, 3, 4}, {2, 2}), b = T({10, 20, 30, 40}, {2, 2});
  const Tensor row = T({100, 200}, {2});
  Add add;
  Multiply multiply;
  Concatenate last, first(0);
  EXPECT_EQ(Values(*add.ForwardInputs({a, b, row}, false)),
            (std::vector<float>{111, 222, 133, 244}));
  EXPECT_EQ(Values(*multiply.ForwardInputs({a, b}, false)), (std::vector<float>{10, 40, 90, 160}));
  const Tensor joined = *last.ForwardInputs({a, b}, false);
  EXPECT_EQ(joined.shape(), (Shape{2, 4}));
  EXPECT_EQ(Values(joined), (std::vector<float>{1, 2, 10, 20, 3, 4, 30, 40}));
  EXPECT_EQ(first.ForwardInputs({a, b}, false)->shape(), (Shape{4, 2}));
}

TEST(MergeLayersTest, OneInputOrMismatchedShapesAreErrorsNamingTheLayer) {
  Add add;
  Concatenate concatenate;
  const Tensor a = T({1, 2}, {1, 2}), b = T({1, 2, 3}, {1, 3}), c = T({1, 2, 3}, {3, 1});
  EXPECT_THAT(std::string(add.Forward(a, false).status().message()),
              HasSubstr("add: takes 2 or more inputs, got 1"));
  EXPECT_FALSE(add.ForwardInputs({a, b}, false).ok());
  EXPECT_TRUE(concatenate.ForwardInputs({a, b}, false).ok());
  EXPECT_FALSE(concatenate.ForwardInputs({a, c}, false).ok());
}

TEST(MergeLayersTest, GradientsMatchFiniteDifferences) {
  const std::vector<Tensor> in = {RandomTensor({2, 3}, 1), RandomTensor({2, 3}, 2),
                                  RandomTensor({2, 3}, 3)};
  Add add;
  Multiply multiply;
  Concatenate concatenate(0);
  for (Module* layer : std::vector<Module*>{&add, &multiply, &concatenate}) {
    SCOPED_TRACE(layer->name());
    EXPECT_EQ(CheckGradients(
                  [&](const std::vector<Tensor>& x) { return layer->ForwardInputs(x, true); }, in),
              "");
  }
}

// x -> dense_a -> relu -> dense_b, plus x -> dense_a's output added back: a skip connection.
struct SkipModel {
  std::shared_ptr<Dense> a = std::make_shared<Dense>(4, DenseOptions{.seed = 1});
  std::shared_ptr<Dense> b = std::make_shared<Dense>(4, DenseOptions{.seed = 2});
  std::unique_ptr<Model> model;
  SkipModel() {
    SymbolicTensor in = Input({3});
    SymbolicTensor h = Apply(a, in);
    SymbolicTensor out = Apply(Add(), {h, Apply(b, Apply(ReLU(), h))});
    model = *Model::Make({in}, {out});
  }
};

TEST(FunctionalModelTest, ASkipConnectionComputesWhatTheLayersDoByHand) {
  SkipModel m;
  const Tensor x = RandomTensor({5, 3}, 7);
  const Tensor h = *m.a->Forward(x, false);
  const Tensor relu = *ReLU().Forward(h, false);
  const Tensor expected = *ops::Add(h, *m.b->Forward(relu, false));
  ExpectNear(*m.model->Forward(x, false), expected);
  EXPECT_EQ(m.model->Children().size(), 4u);
  EXPECT_EQ(CheckModuleGradients(*m.model, x, true), "");
}

TEST(FunctionalModelTest, LayersAreNamedByKindInCallOrderOrAsGiven) {
  SymbolicTensor in = Input({3}, "features");
  SymbolicTensor x = Apply(Dense(4, DenseOptions{.seed = 1}), in);
  x = Apply(Dense(4, DenseOptions{.seed = 2}), x, "hidden");
  x = Apply(Dense(2, DenseOptions{.seed = 3}), x);
  auto model = Model::Make({in}, {x});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(Names((*model)->TrainableVariables()),
              ElementsAre("dense/kernel", "dense/bias", "hidden/kernel", "hidden/bias",
                          "dense_1/kernel", "dense_1/bias"));
  EXPECT_TRUE((*model)->GetLayer("hidden").ok());
  EXPECT_EQ((*(*model)->GetLayer("dense_1"))->layer_name(), "dense_1");
  const absl::Status missing = (*model)->GetLayer("pool").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("dense, hidden, dense_1"));
  EXPECT_EQ((*model)->steps()[0].name, "features");
}

TEST(FunctionalModelTest, ASharedLayerHasOneSetOfVariablesAndGradientsFromEveryCall) {
  auto shared = std::make_shared<Dense>(3, DenseOptions{.seed = 4});
  SymbolicTensor in = Input({3});
  SymbolicTensor once = Apply(shared, in);
  SymbolicTensor twice = Apply(shared, once);
  auto model = Model::Make({in}, {Apply(Multiply(), {once, twice})});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(Names((*model)->Variables()), ElementsAre("dense/kernel", "dense/bias"));
  const Tensor x = RandomTensor({4, 3}, 8);
  const Tensor y1 = *shared->Forward(x, false);
  ExpectNear(*(*model)->Forward(x, false), *ops::Mul(y1, *shared->Forward(y1, false)));
  EXPECT_EQ(CheckModuleGradients(**model, x, true), "");
}

TEST(FunctionalModelTest, SeveralInputsAndOutputs) {
  SymbolicTensor image = Input({4, 4, 2}, "image");
  SymbolicTensor extra = Input({3}, "extra");
  SymbolicTensor pooled = Apply(GlobalAvgPool(), image);
  SymbolicTensor joined = Apply(Concatenate(), {pooled, extra});
  SymbolicTensor logits = Apply(Dense(5, DenseOptions{.seed = 5}), joined, "logits");
  SymbolicTensor aux = Apply(Dense(1, DenseOptions{.seed = 6}), pooled, "aux");
  auto model = Model::Make({image, extra}, {logits, aux});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(joined.shape(), (Shape{1, 5}));
  const Tensor x1 = RandomTensor({2, 4, 4, 2}, 9), x2 = RandomTensor({2, 3}, 10);
  auto out = (*model)->Call({x1, x2}, false);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 5}));
  EXPECT_EQ((*out)[1].shape(), (Shape{2, 1}));
  // Forward takes one input and gives one output; a model of more says so.
  EXPECT_THAT(std::string((*model)->Forward(x1, false).status().message()),
              HasSubstr("takes 2 inputs, got 1"));
  EXPECT_THAT(std::string((*model)->ForwardInputs({x1, x2}, false).status().message()),
              HasSubstr("has 2 outputs"));
  const absl::Status wrong = (*model)->Call({x2, x1}, false).status();
  EXPECT_THAT(std::string(wrong.message()),
              HasSubstr("input 0 ('image') expects (None, 4, 4, 2), got [2, 3]"));
}

TEST(FunctionalModelTest, DeclarationErrorsNameTheLayerOrTheInput) {
  SymbolicTensor in = Input({3});
  SymbolicTensor image = Input({4}, "image");
  // A layer that cannot take its input's shape: the error waits in the tensor until Make.
  SymbolicTensor bad = Apply(Add(), {in, image}, "join");
  EXPECT_FALSE(bad.ok());
  SymbolicTensor after = Apply(Dense(2), bad);
  const absl::Status status = Model::Make({in, image}, {after}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("'join' (add) on inputs (None, 3), (None, 4)"));
  // An output that needs an input the model does not list.
  SymbolicTensor y = Apply(Dense(2), in);
  EXPECT_THAT(std::string(Model::Make({image}, {y}).status().message()),
              HasSubstr("output 0 needs the Input of shape (None, 3), which is not among"));
  // Two layers of one name; a layer renamed.
  SymbolicTensor a = Apply(Dense(2), in, "same");
  SymbolicTensor b = Apply(Dense(2), in, "same");
  EXPECT_THAT(std::string(Model::Make({in}, {a, b}).status().message()),
              HasSubstr("two layers or inputs are named 'same'"));
  EXPECT_THAT(std::string(Model::Make({in}, {Apply(Dense(2), in, "a/b")}).status().message()),
              HasSubstr("the layer name 'a/b' contains '/'"));
  auto dense = std::make_shared<Dense>(2);
  Apply(dense, in, "first");
  EXPECT_THAT(std::string(Apply(dense, in, "second").status().message()),
              HasSubstr("'first' cannot be named 'second'"));
}

TEST(FunctionalModelTest, AModelCutAtAnInnerLayerSharesItsVariables) {
  SymbolicTensor in = Input({6, 6, 1});
  SymbolicTensor x = Apply(Conv2D(4, 3, Conv2DLayerOptions{.seed = 1}), in);
  SymbolicTensor pool = Apply(GlobalAvgPool(), x, "pool");
  auto base = Model::Make({in}, {Apply(Dense(3, DenseOptions{.seed = 2}), pool)});
  ASSERT_TRUE(base.ok()) << base.status();
  // include_top = false: the base up to "pool", and a new head after it.
  auto pool_output = (*base)->LayerOutput("pool");
  ASSERT_TRUE(pool_output.ok()) << pool_output.status();
  auto features = Model::Make((*base)->inputs(), {*pool_output}, "features");
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_THAT(Names((*features)->Variables()), ElementsAre("conv2d/kernel", "conv2d/bias"));
  EXPECT_EQ((*features)->Variables()[0], (*base)->Variables()[0]);
  auto head = Model::Make((*base)->inputs(),
                          {Apply(Dense(2, DenseOptions{.seed = 3}), *pool_output, "head")});
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_THAT(Names((*head)->TrainableVariables()),
              ElementsAre("conv2d/kernel", "conv2d/bias", "head/kernel", "head/bias"));
  // The cut model computes the base's inner tensor.
  const Tensor image = RandomTensor({2, 6, 6, 1}, 3);
  Module* conv = *(*base)->GetLayer("conv2d");
  const Tensor expected = *GlobalAvgPool().Forward(*conv->Forward(image, false), false);
  ExpectNear(*(*features)->Forward(image, false), expected);
  // Freezing the base freezes the shared layer in every model that calls it.
  (*features)->set_trainable(false);
  EXPECT_THAT(Names((*head)->TrainableVariables()), ElementsAre("head/kernel", "head/bias"));
  // A layer called twice has no one output.
  auto shared = std::make_shared<ReLU>();
  SymbolicTensor v = Input({2});
  auto twice = Model::Make({v}, {Apply(shared, Apply(shared, v, "r"))});
  ASSERT_TRUE(twice.ok());
  EXPECT_THAT(std::string((*twice)->LayerOutput("r").status().message()),
              HasSubstr("called more than once"));
}

TEST(FunctionalModelTest, SavesSizesAndLoadsWithTheSameOutputs) {
  SymbolicTensor in = Input({6, 6, 2}, "image");
  auto shared = std::make_shared<Conv2D>(
      2, 3, Conv2DLayerOptions{.conv = {.padding = ops::Padding::kSame}, .seed = 1});
  SymbolicTensor x = Apply(shared, in);
  SymbolicTensor y = Apply(shared, Apply(ReLU(), x));
  SymbolicTensor sum = Apply(Add(), {x, y, in});
  SymbolicTensor joined = Apply(Concatenate(-1), {sum, x});
  SymbolicTensor out = Apply(Dense(3, DenseOptions{.seed = 2}),
                             Apply(Flatten(), Apply(GlobalAvgPool(), joined)), "logits");
  auto model = Model::Make({in}, {out}, "skips");
  ASSERT_TRUE(model.ok()) << model.status();
  auto config = (*model)->GetConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  auto size = LayerSizeFromConfig(*config, Shape{8, 6, 6, 2});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_TRUE(size->known);
  int64_t parameters = 0;
  for (autodiff::Variable* v : (*model)->Variables()) parameters += v->shape().num_elements();
  EXPECT_EQ(size->parameters, parameters);  // the shared convolution once
  EXPECT_EQ(size->parameters, (3 * 3 * 2 * 2 + 2) + (4 * 3 + 3));
  EXPECT_EQ(size->output_shape, (Shape{8, 3}));
  // The input and every call, the shared convolution's second without its variables.
  ASSERT_EQ(size->layers.size(), 9u);
  EXPECT_EQ(size->layers[0].prefix, "image@input/");
  EXPECT_EQ(size->layers[1].prefix, "conv2d/");
  EXPECT_EQ(size->layers[3].prefix, "conv2d@1/");
  EXPECT_EQ(size->layers[3].parameters, 0);
  EXPECT_EQ(size->layers[5].output_shape, (Shape{8, 6, 6, 4}));  // the Concatenate
  EXPECT_FALSE(LayerSizeFromConfig(*config, Shape{8, 6, 6, 3}).ok());

  ScopedTempDir dir;
  ASSERT_TRUE(fit::SaveModel(**model, Shape{1, 6, 6, 2}, dir.path()).ok());
  auto loaded = fit::LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto* functional = dynamic_cast<Model*>(loaded->model.get());
  ASSERT_NE(functional, nullptr);
  EXPECT_EQ(functional->name(), "skips");
  EXPECT_EQ(Names(functional->Variables()), Names((*model)->Variables()));
  EXPECT_EQ(functional->steps().size(), (*model)->steps().size());
  const Tensor image = RandomTensor({3, 6, 6, 2}, 4);
  ExpectNear(*functional->Forward(image, false), *(*model)->Forward(image, false));
  // Each call's output is checked before anything is made: the Concatenate's 144 elements.
  const absl::Status limited =
      fit::LoadModel(dir.path(), {.max_activation_elements = 100}).status();
  EXPECT_EQ(limited.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(limited.message()), HasSubstr("concatenate"));
}

TEST(FunctionalModelTest, AnUntrustedConfigIsCheckedBeforeAnythingIsMade) {
  SymbolicTensor in = Input({3});
  auto model = *Model::Make({in}, {Apply(Dense(2), in)});
  LayerConfig config = *model->GetConfig();
  LayerConfig later = config;
  later.strings["node_1"] = "0:1";  // reads its own output
  EXPECT_THAT(std::string(LayerFromConfig(later).status().message()),
              HasSubstr("node 1 refers to '1'"));
  LayerConfig no_layer = config;
  no_layer.strings["node_1"] = "5:0";
  EXPECT_FALSE(LayerFromConfig(no_layer).ok());
  LayerConfig huge = config;
  huge.ints["nodes"] = int64_t{1} << 40;
  EXPECT_FALSE(LayerSizeFromConfig(huge, Shape{1, 3}).ok());
  LayerConfig shape = config;
  shape.strings["input_0_shape"] = "3,-1";
  EXPECT_FALSE(LayerFromConfig(shape).ok());
  EXPECT_TRUE(LayerFromConfig(config).ok());
}

TEST(FunctionalModelTest, SummaryListsEveryCallWithWhatItIsConnectedTo) {
  SkipModel m;
  const std::string text = Summary(*m.model);
  EXPECT_THAT(text, HasSubstr("Connected to"));
  EXPECT_THAT(text, HasSubstr("input (input)"));
  EXPECT_THAT(text, HasSubstr("add (add)"));
  EXPECT_THAT(text, HasSubstr("dense, dense_1"));
  EXPECT_THAT(text, HasSubstr("Total params: 36"));  // (3*4+4) + (4*4+4)
}

TEST(FunctionalModelTest, ATinyResidualNetworkOverfitsOneBatch) {
  SymbolicTensor in = Input({4});
  SymbolicTensor h = Apply(Dense(16, Activation::kRelu, {.seed = 1}), in);
  SymbolicTensor r = Apply(Dense(16, Activation::kRelu, {.seed = 2}), h);
  SymbolicTensor out = Apply(Dense(3, DenseOptions{.seed = 3}), Apply(Add(), {h, r}));
  auto model = *Model::Make({in}, {out});
  testing::ExpectOverfitsOneBatch(*model, 150);
}

}  // namespace
}  // namespace sluice::train::layers
