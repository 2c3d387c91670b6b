// GlobalMaxPool (train/layers/global_max_pool.h), Keras' GlobalMaxPooling2D: values by hand,
// keepdims, finite differences away from ties, its config.
#include "train/layers/global_max_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(GlobalMaxPoolTest, TheMaximumOverHeightAndWidthPerChannel) {
  // [1, 2, 2, 2]: channel 0 holds 1, -2, 3, 0; channel 1 holds -10, -20, -5, -30.
  const Tensor x = T({1, -10, -2, -20, 3, -5, 0, -30}, {1, 2, 2, 2});
  absl::StatusOr<Tensor> y = GlobalMaxPooling2D().Forward(x, false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(3, -5));
  y = GlobalMaxPool({.keepdims = true}).Forward(x, false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 1, 1, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(3, -5));
  EXPECT_FALSE(GlobalMaxPool().Forward(T({1, 2}, {1, 2}), false).ok());
}

TEST(GlobalMaxPoolTest, FiniteDifferences) {
  // Distinct values, so that no step of the differences crosses a tie.
  Tensor x(DType::kFloat32, Shape{2, 3, 3, 4});
  std::vector<float> values(x.num_elements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = -1 + 0.03f * static_cast<float>(i);
  std::shuffle(values.begin(), values.end(), std::mt19937(5));
  std::copy(values.begin(), values.end(), x.data<float>());
  GlobalMaxPool flat;
  GlobalMaxPool kept({.keepdims = true});
  EXPECT_EQ(CheckModuleGradients(flat, x, true), "");
  EXPECT_EQ(CheckModuleGradients(kept, x, true), "");
}

TEST(GlobalMaxPoolTest, ConfigAndSize) {
  for (bool keepdims : {false, true}) {
    absl::StatusOr<LayerConfig> config = GlobalMaxPool({.keepdims = keepdims}).GetConfig();
    ASSERT_TRUE(config.ok());
    absl::StatusOr<std::unique_ptr<Module>> made = LayerFromConfig(*config);
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ(dynamic_cast<GlobalMaxPool&>(**made).keepdims(), keepdims);
    absl::StatusOr<LayerSize> size = LayerSizeFromConfig(*config, Shape{3, 5, 4, 7});
    ASSERT_TRUE(size.ok()) << size.status();
    EXPECT_EQ(size->output_shape, keepdims ? Shape({3, 1, 1, 7}) : Shape({3, 7}));
  }
}

}  // namespace
}  // namespace sluice::train::layers
