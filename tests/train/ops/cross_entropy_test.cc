#include "train/ops/cross_entropy.h"

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

TEST(CrossEntropyTest, ForwardValues) {
  // Row 0: logits [0, 0] -> loss ln 2. Row 1: [ln 1, ln 3], label 1 -> -ln(3/4).
  Tensor logits = T({0, 0, 0, std::log(3.0f)}, {2, 2});
  Tensor labels64 = Tensor::FromVector<int64_t>({0, 1});
  Tensor labels32 = Tensor::FromVector<int32_t>({0, 1});
  const std::vector<float> want = {std::log(2.0f), -std::log(0.75f)};
  EXPECT_THAT(Values(*SparseSoftmaxCrossEntropyWithLogits(logits, labels64)),
              Pointwise(FloatNear(1e-6), want));
  EXPECT_THAT(Values(*SparseSoftmaxCrossEntropyWithLogits(logits, labels32)),
              Pointwise(FloatNear(1e-6), want));
}

TEST(CrossEntropyTest, GradientIsSoftmaxMinusOneHot) {
  Tensor logits = T({0, 0, 0, std::log(3.0f)}, {2, 2});
  Tensor labels = Tensor::FromVector<int32_t>({0, 1});
  autodiff::Tape tape;
  tape.Watch(logits);
  auto g = *tape.Gradient(*SparseSoftmaxCrossEntropyWithLogits(logits, labels), {logits, labels});
  EXPECT_THAT(Values(*g[0]), Pointwise(FloatNear(1e-6), {-0.5f, 0.5f, 0.25f, -0.25f}));
  EXPECT_FALSE(g[1]);
}

TEST(CrossEntropyTest, GradientsMatchFiniteDifferences) {
  Tensor labels = Tensor::FromVector<int64_t>({2, 0, 4});
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) {
                  return SparseSoftmaxCrossEntropyWithLogits(in[0], in[1]);
                },
                {RandomTensor({3, 5}, 12, -2, 2), labels}),
            "");
}

TEST(CrossEntropyTest, BadLabelsAreErrors) {
  Tensor logits = T({0, 0, 0, 0}, {2, 2});
  EXPECT_EQ(SparseSoftmaxCrossEntropyWithLogits(logits, Tensor::FromVector<int32_t>({0, 2}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(SparseSoftmaxCrossEntropyWithLogits(logits, T({0, 1}, {2})).ok());  // float labels
  EXPECT_FALSE(SparseSoftmaxCrossEntropyWithLogits(logits, Tensor::FromVector<int32_t>({0})).ok());
}

}  // namespace
}  // namespace sluice::train::ops
