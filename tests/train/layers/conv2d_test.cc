// Conv2D (train/conv2d_layer.h): the bias per filter, and finite differences
// with respect to input, kernel and bias.
#include "train/layers/conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

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

}  // namespace
}  // namespace sluice::train::layers
