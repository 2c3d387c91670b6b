// Conv2D (train/conv2d_layer.h): the bias per filter, and finite differences
// with respect to input, kernel and bias.
#include "train/layers/conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/dense.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

// Filters or a kernel side below 1 are an error, as Keras'; they made tensors of negative sizes.
TEST(Conv2DLayerTest, FiltersAndKernelSizesBelowOneAreErrors) {
  const Tensor x = RandomTensor({1, 5, 5, 2}, 1);
  std::vector<std::unique_ptr<Conv2D>> convs;
  convs.push_back(std::make_unique<Conv2D>(-2, 3));
  convs.push_back(std::make_unique<Conv2D>(0, 3));
  convs.push_back(std::make_unique<Conv2D>(4, KernelSize(-3, 3)));
  for (auto& conv : convs) {
    absl::StatusOr<Tensor> y = conv->Forward(x, false);
    ASSERT_FALSE(y.ok());
    EXPECT_THAT(y.status().message(),
                ::testing::HasSubstr("filters and the kernel size must be >= 1"));
  }
}

TEST(Conv2DLayerTest, AddsBiasPerFilter) {
  Conv2D conv(1, 2, 1, 1);
  ASSERT_TRUE(conv.kernel().Assign(T({1, -1}, {1, 1, 1, 2})).ok());
  ASSERT_TRUE(conv.bias()->Assign(T({100, 200}, {2})).ok());
  Tensor y = *conv.Forward(T({1, 2}, {1, 1, 2, 1}), /*training=*/false);
  EXPECT_EQ(y.shape(), Shape({1, 1, 2, 2}));
  EXPECT_THAT(Values(y), ElementsAre(101, 199, 102, 198));
}

TEST(Conv2DLayerTest, FiniteDifferences) {
  Conv2D conv(2, 3, 3, 3,
              {.conv = {.stride_h = 2, .stride_w = 2, .padding = ops::Padding::kSame}, .seed = 3});
  ASSERT_TRUE(conv.bias()->Assign(T({0.1f, -0.2f, 0.3f}, {3})).ok());
  EXPECT_EQ(CheckModuleGradients(conv, RandomTensor({2, 5, 5, 2}, 6), /*training=*/true), "");
}

// Keras' Conv2D(groups=): the kernel [kh, kw, in / groups, filters]; groups must divide both.
TEST(Conv2DLayerTest, GroupsSplitTheChannels) {
  Conv2D conv(6, 3, {.conv = {.groups = 2}, .seed = 4});
  ASSERT_TRUE(conv.Build(Shape{1, 5, 5, 4}).ok());
  EXPECT_EQ(conv.kernel().shape(), Shape({3, 3, 2, 6}));
  EXPECT_EQ(conv.GetConfig()->ints.at("groups"), 2);
  EXPECT_EQ(CheckModuleGradients(conv, RandomTensor({2, 5, 5, 4}, 7), /*training=*/true), "");
  Conv2D uneven(6, 3, {.conv = {.groups = 3}});
  absl::Status s = uneven.Build(Shape{1, 5, 5, 4});
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(),
              ::testing::HasSubstr("conv2d: groups 3 must divide the input channels (4) and the "
                                   "filters (6)"));
}

// Conv2D(filters, kernel_size, activation), as Dense(units, activation); and
// Dense(units, {...}), as Conv2D takes its options.
TEST(Conv2DTest, ActivationAsAnArgumentOrAnOptionAsDenseTakesIt) {
  Conv2D conv(4, 3, Activation::kRelu, {.seed = 2});
  absl::StatusOr<LayerConfig> config = conv.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->strings.at("activation"), "relu");
  EXPECT_EQ(config->ints.at("seed"), 2);
  Dense dense(10, {.seed = 3, .activation = Activation::kSoftmax});
  config = dense.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->strings.at("activation"), "softmax");
}

TEST(Conv2DTest, AnImageWithoutItsChannelAxisSaysHowToAddIt) {
  Conv2D conv(4, 3);
  const absl::Status s = conv.Build(Shape({8, 28, 28}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[batch, height, width, 1]"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice::train::layers
