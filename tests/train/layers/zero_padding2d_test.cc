// ZeroPadding2D (train/layers/zero_padding2d.h): Keras' three forms of padding, values by hand,
// finite differences, its config and errors.
#include "train/layers/zero_padding2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ZeroPadding2DTest, KerasForms) {
  const Tensor x = T({1, 2, 3, 4}, {1, 2, 2, 1});
  // The default and an int: one of every side.
  absl::StatusOr<Tensor> y = ZeroPadding2D().Forward(x, false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 4, 4, 1}));
  EXPECT_THAT(Values(*y), ElementsAre(0, 0, 0, 0,  //
                                      0, 1, 2, 0,  //
                                      0, 3, 4, 0,  //
                                      0, 0, 0, 0));
  // (h, w): 0 rows, 1 column each side.
  y = ZeroPadding2D(0, 1).Forward(x, false);
  EXPECT_EQ(y->shape(), Shape({1, 2, 4, 1}));
  EXPECT_THAT(Values(*y), ElementsAre(0, 1, 2, 0, 0, 3, 4, 0));
  // ((top, bottom), (left, right)).
  y = ZeroPadding2D({1, 0}, {0, 2}).Forward(x, false);
  EXPECT_EQ(y->shape(), Shape({1, 3, 4, 1}));
  EXPECT_THAT(Values(*y), ElementsAre(0, 0, 0, 0,  //
                                      1, 2, 0, 0,  //
                                      3, 4, 0, 0));
}

TEST(ZeroPadding2DTest, ChannelsAndBatchStayInPlace) {
  // [2, 1, 1, 2]: two images of one pixel, two channels; padded by one column on the right.
  absl::StatusOr<Tensor> y =
      ZeroPadding2D({0, 0}, {0, 1}).Forward(T({1, 2, 3, 4}, {2, 1, 1, 2}), false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2, 1, 2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(1, 2, 0, 0, 3, 4, 0, 0));
}

TEST(ZeroPadding2DTest, FiniteDifferences) {
  ZeroPadding2D padding({2, 1}, {0, 3});
  EXPECT_EQ(CheckModuleGradients(padding, RandomTensor({2, 3, 4, 2}, 31), true), "");
  ZeroPadding2D none(0);
  EXPECT_EQ(CheckModuleGradients(none, RandomTensor({1, 2, 2, 1}, 32), true), "");
}

TEST(ZeroPadding2DTest, ConfigSizeAndErrors) {
  ZeroPadding2D padding({1, 2}, {3, 4});
  absl::StatusOr<LayerConfig> config = padding.GetConfig();
  ASSERT_TRUE(config.ok());
  absl::StatusOr<std::unique_ptr<Module>> made = LayerFromConfig(*config);
  ASSERT_TRUE(made.ok()) << made.status();
  const Tensor x = RandomTensor({1, 3, 3, 2}, 33);
  EXPECT_EQ(Values(*(*made)->Forward(x, false)), Values(*padding.Forward(x, false)));
  absl::StatusOr<LayerSize> size = LayerSizeFromConfig(*config, Shape{5, 3, 3, 2});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->output_shape, Shape({5, 6, 10, 2}));
  EXPECT_EQ(size->parameters, 0);

  EXPECT_THAT(ZeroPadding2D(-1).Forward(x, false).status().message(),
              HasSubstr("ZeroPadding2D: padding ((-1, -1), (-1, -1)) has a negative side"));
  EXPECT_THAT(ZeroPadding2D().Forward(RandomTensor({3, 3}, 34), false).status().message(),
              HasSubstr("expects NHWC"));
  config->ints["left"] = -2;
  EXPECT_THAT(LayerFromConfig(*config).status().message(), HasSubstr("negative side"));
}

}  // namespace
}  // namespace sluice::train::layers
