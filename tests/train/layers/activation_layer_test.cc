// ActivationLayer (train/layers/activation_layer.h), Keras' Activation layer: each activation's
// values against its definition, finite differences, its config under Keras' names, SaveModel and
// LoadModel of a functional model that uses it, and Summary.
#include "train/layers/activation_layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/fit/saved_model.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/layer_config.h"
#include "train/layers/model.h"
#include "train/layers/multiply.h"
#include "train/layers/summary.h"

namespace sluice::train::layers {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::Values;
using ::testing::HasSubstr;

constexpr Activation kAll[] = {Activation::kLinear, Activation::kRelu, Activation::kSigmoid,
                               Activation::kTanh,   Activation::kGelu, Activation::kSoftmax};

// Each activation written out from its definition, on rows of `columns` values (softmax is over
// the last axis).
std::vector<float> ByDefinition(Activation activation, const std::vector<float>& x,
                                size_t columns) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    switch (activation) {
      case Activation::kLinear:
        y[i] = v;
        break;
      case Activation::kRelu:
        y[i] = v > 0 ? v : 0;
        break;
      case Activation::kSigmoid:
        y[i] = 1 / (1 + std::exp(-v));
        break;
      case Activation::kTanh:
        y[i] = std::tanh(v);
        break;
      case Activation::kGelu:  // the exact GELU, Keras' default (approximate=False)
        y[i] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        break;
      case Activation::kSoftmax: {
        const size_t row = i - i % columns;
        double sum = 0;
        for (size_t j = row; j < row + columns; ++j) sum += std::exp(x[j]);
        y[i] = std::exp(v) / sum;
        break;
      }
    }
  }
  return y;
}

TEST(ActivationLayerTest, EachActivationIsItsDefinition) {
  const Tensor x = RandomTensor({2, 3, 2, 5}, 11, -4, 4);
  for (Activation activation : kAll) {
    SCOPED_TRACE(ActivationName(activation));
    absl::StatusOr<Tensor> y = ActivationLayer(activation).Forward(x, /*training=*/false);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), x.shape());
    EXPECT_THAT(Values(*y), ::testing::Pointwise(::testing::FloatNear(1e-5f),
                                                 ByDefinition(activation, Values(x), 5)));
  }
}

TEST(ActivationLayerTest, FiniteDifferences) {
  // Values away from relu's kink at 0, where the one-sided slopes differ.
  Tensor x = RandomTensor({2, 3, 4, 5}, 12, 0.05f, 2);
  for (float& v : x.flat<float>()) v = (static_cast<int>(v * 1000) % 2 == 0) ? v : -v;
  for (Activation activation : kAll) {
    ActivationLayer layer(activation);
    EXPECT_EQ(CheckModuleGradients(layer, x, /*training=*/true), "") << ActivationName(activation);
  }
}

// Keras' config: class "Activation", {"activation": "sigmoid"}; made again the same, sized with
// no variables and the input's shape.
TEST(ActivationLayerTest, ConfigUnderKerasNamesMakesTheSameLayer) {
  const Tensor x = RandomTensor({3, 4}, 13, -2, 2);
  for (Activation activation : kAll) {
    SCOPED_TRACE(ActivationName(activation));
    ActivationLayer layer(activation);
    absl::StatusOr<LayerConfig> config = layer.GetConfig();
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->class_name, "Activation");
    EXPECT_EQ(config->strings.at("activation"), ActivationName(activation));
    absl::StatusOr<std::unique_ptr<Module>> made = LayerFromConfig(*config);
    ASSERT_TRUE(made.ok()) << made.status();
    auto* remade = dynamic_cast<ActivationLayer*>(made->get());
    ASSERT_NE(remade, nullptr);
    EXPECT_EQ(remade->activation(), activation);
    EXPECT_EQ(Values(*remade->Forward(x, false)), Values(*layer.Forward(x, false)));
    absl::StatusOr<LayerSize> size = LayerSizeFromConfig(*config, Shape{7, 5, 3, 2});
    ASSERT_TRUE(size.ok()) << size.status();
    EXPECT_EQ(size->parameters, 0);
    EXPECT_EQ(size->output_shape, Shape({7, 5, 3, 2}));
  }
  // Keras' names as a user writes them.
  absl::StatusOr<std::unique_ptr<Module>> made =
      LayerFromConfig({.class_name = "Activation", .strings = {{"activation", "tanh"}}});
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(dynamic_cast<ActivationLayer&>(**made).activation(), Activation::kTanh);
}

TEST(ActivationLayerTest, AnUnknownOrMissingActivationIsAnErrorNamingIt) {
  const LayerConfig swish{.class_name = "Activation", .strings = {{"activation", "swish"}}};
  absl::Status s = LayerFromConfig(swish).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("Activation: unknown activation 'swish'"));
  EXPECT_FALSE(LayerSizeFromConfig(swish, Shape{1, 3}).ok());
  s = LayerFromConfig({.class_name = "Activation"}).status();
  EXPECT_THAT(s.message(), HasSubstr("has no 'activation'"));
}

// A functional model with a swish gate (x * sigmoid(x)) and a softmax head: it saves, sizes,
// loads with the same layers and outputs, and Summary lists the layers under Keras' names.
TEST(ActivationLayerTest, AFunctionalModelSavesLoadsAndPrints) {
  SymbolicTensor in = Input({5, 4, 3});
  SymbolicTensor x = Apply(Conv2D(4, 3, {.conv = {.padding = ops::Padding::kSame}, .seed = 1}), in);
  SymbolicTensor gated = Apply(Multiply(), {x, Apply(ActivationLayer(Activation::kSigmoid), x)});
  SymbolicTensor pooled = Apply(ActivationLayer(Activation::kTanh), Apply(GlobalAvgPool(), gated));
  SymbolicTensor out = Apply(ActivationLayer(Activation::kSoftmax),
                             Apply(Dense(3, DenseOptions{.seed = 2}), pooled), "probabilities");
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Make({in}, {out}, "gated");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->GetLayer("activation").ok());
  EXPECT_TRUE((*model)->GetLayer("activation_1").ok());

  const std::string summary = Summary(**model);
  EXPECT_THAT(summary, HasSubstr("activation (activation)"));
  EXPECT_THAT(summary, HasSubstr("activation_1 (activation)"));
  EXPECT_THAT(summary, HasSubstr("probabilities (activation)"));
  EXPECT_THAT(summary, HasSubstr("Total params: 127"));  // (3*3*3*4 + 4) + (4*3 + 3)

  ScopedTempDir dir;
  ASSERT_TRUE(fit::SaveModel(**model, Shape{1, 5, 4, 3}, dir.path()).ok());
  absl::StatusOr<fit::LoadedModel> loaded = fit::LoadModel(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto* functional = dynamic_cast<Model*>(loaded->model.get());
  ASSERT_NE(functional, nullptr);
  for (const auto& [name, activation] :
       {std::pair{"activation", Activation::kSigmoid}, std::pair{"activation_1", Activation::kTanh},
        std::pair{"probabilities", Activation::kSoftmax}}) {
    absl::StatusOr<Module*> layer = functional->GetLayer(name);
    ASSERT_TRUE(layer.ok()) << layer.status();
    auto* activation_layer = dynamic_cast<ActivationLayer*>(*layer);
    ASSERT_NE(activation_layer, nullptr) << name;
    EXPECT_EQ(activation_layer->activation(), activation) << name;
  }
  const Tensor image = RandomTensor({2, 5, 4, 3}, 14);
  absl::StatusOr<Tensor> expected = (*model)->Forward(image, false);
  absl::StatusOr<Tensor> got = functional->Forward(image, false);
  ASSERT_TRUE(expected.ok() && got.ok());
  EXPECT_EQ(Values(*got), Values(*expected));
  // Each row of the softmax head sums to 1.
  EXPECT_NEAR(Values(*got)[0] + Values(*got)[1] + Values(*got)[2], 1, 1e-6);
}

}  // namespace
}  // namespace sluice::train::layers
