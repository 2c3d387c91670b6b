#include "train/ops/dropout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/gradient_check.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(DropoutTest, KeepsOrZeroesAndScales) {
  Tensor x = RandomTensor({1000}, 61, 1.0f, 2.0f);
  Tensor y = *Dropout(x, {.rate = 0.25f, .seed = 5});
  int dropped = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float v = y.data<float>()[i];
    if (v == 0) {
      ++dropped;
    } else {
      EXPECT_FLOAT_EQ(v, x.data<float>()[i] / 0.75f);
    }
  }
  EXPECT_GT(dropped, 200);
  EXPECT_LT(dropped, 300);
}

TEST(DropoutTest, SeedDecidesMask) {
  Tensor x = RandomTensor({64}, 62, 1.0f, 2.0f);
  EXPECT_TRUE(Dropout(x, {.seed = 1})->Equals(*Dropout(x, {.seed = 1})));
  EXPECT_FALSE(Dropout(x, {.seed = 1})->Equals(*Dropout(x, {.seed = 2})));
  EXPECT_TRUE(Dropout(x, {.rate = 0})->Equals(x));
  EXPECT_FALSE(Dropout(x, {.rate = 1}).ok());
}

TEST(DropoutTest, GradientsMatchFiniteDifferences) {
  EXPECT_EQ(
      CheckGradients(
          [](const std::vector<Tensor>& in) { return Dropout(in[0], {.rate = 0.4f, .seed = 3}); },
          {RandomTensor({4, 5}, 63)}),
      "");
}

}  // namespace
}  // namespace sluice::train::ops
