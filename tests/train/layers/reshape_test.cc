// Reshape (train/layers/reshape.h): Keras' target shape without the batch, one -1 inferred,
// finite differences, its config and errors.
#include "train/layers/reshape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::Values;
using ::testing::HasSubstr;

TEST(ReshapeLayerTest, KeepsTheBatchAndTheValuesInOrder) {
  const Tensor x = RandomTensor({3, 2, 2, 3}, 41);
  absl::StatusOr<Tensor> y = Reshape({4, 3}).Forward(x, false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({3, 4, 3}));
  EXPECT_EQ(Values(*y), Values(x));
  y = Reshape({-1, 6}).Forward(x, false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({3, 2, 6}));
  y = Reshape({2, -1, 1, 1}).Forward(x, false);
  EXPECT_EQ(y->shape(), Shape({3, 2, 6, 1, 1}));
  y = Reshape({-1}).Forward(x, false);
  EXPECT_EQ(y->shape(), Shape({3, 12}));
}

TEST(ReshapeLayerTest, FiniteDifferences) {
  Reshape reshape({3, -1});
  EXPECT_EQ(CheckModuleGradients(reshape, RandomTensor({2, 6, 2}, 42), true), "");
}

TEST(ReshapeLayerTest, ConfigAndSize) {
  Reshape reshape({2, -1, 3});
  absl::StatusOr<LayerConfig> config = reshape.GetConfig();
  ASSERT_TRUE(config.ok());
  absl::StatusOr<std::unique_ptr<Module>> made = LayerFromConfig(*config);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(dynamic_cast<Reshape&>(**made).target_shape(), (std::vector<int64_t>{2, -1, 3}));
  absl::StatusOr<LayerSize> size = LayerSizeFromConfig(*config, Shape{7, 4, 3});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->output_shape, Shape({7, 2, 2, 3}));
  config->ints["rank"] = 1000;
  EXPECT_THAT(LayerFromConfig(*config).status().message(), HasSubstr("rank 1000"));
}

TEST(ReshapeLayerTest, ShapesThatDoNotFitAreErrorsNamingBoth) {
  const Tensor x = RandomTensor({2, 3, 4}, 43);
  absl::Status s = Reshape({5, -1}).Forward(x, false).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("cannot reshape input ", x.shape().DebugString(),
                                                  " to [batch, 5, -1]")));
  EXPECT_THAT(s.message(), HasSubstr("12 values per example do not divide by 5"));
  EXPECT_THAT(Reshape({5}).Forward(x, false).status().message(),
              HasSubstr("12 values per example, not 5"));
  EXPECT_THAT(Reshape({-1, -1}).Forward(x, false).status().message(),
              HasSubstr("more than one -1"));
  EXPECT_THAT(Reshape({0, 12}).Forward(x, false).status().message(), HasSubstr("-1 or at least 1"));
}

}  // namespace
}  // namespace sluice::train::layers
