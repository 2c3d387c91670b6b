#include "train/ops/activations.h"

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

TEST(ActivationsTest, ForwardValues) {
  Tensor x = T({-2, 0, 0.5f, 3}, {2, 2});
  EXPECT_THAT(Values(*Relu(x)), ElementsAre(0, 0, 0.5f, 3));
  // sigmoid(0) = 0.5, sigmoid(3) = 1 / (1 + e^-3) = 0.9525741
  EXPECT_THAT(Values(*Sigmoid(x)),
              Pointwise(FloatNear(1e-6), {0.11920292f, 0.5f, 0.62245933f, 0.95257413f}));
  EXPECT_THAT(Values(*Tanh(x)),
              Pointwise(FloatNear(1e-6), {-0.96402758f, 0.0f, 0.46211716f, 0.99505475f}));
  // gelu(x) = x * Phi(x): Phi(-2) = 0.0227501, Phi(0.5) = 0.6914625, Phi(3) = 0.9986501
  EXPECT_THAT(Values(*Gelu(x)),
              Pointwise(FloatNear(1e-5), {-0.04550026f, 0.0f, 0.34573123f, 2.99595031f}));
}

TEST(ActivationsTest, ReluGradientIsZeroAtZero) {
  Tensor x = T({-1, 0, 2}, {3});
  autodiff::Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*Relu(x), {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(0, 0, 1));
}

TEST(ActivationsTest, GradientsMatchFiniteDifferences) {
  // Keep relu inputs away from the kink at 0, where differences are wrong.
  Tensor pos = RandomTensor({3, 4}, 7, 0.1f, 2.0f);
  Tensor neg = RandomTensor({3, 4}, 8, -2.0f, -0.1f);
  Tensor mixed = RandomTensor({3, 4}, 9, -3.0f, 3.0f);
  for (const Tensor& x : {pos, neg}) {
    EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Relu(in[0]); }, {x}), "");
  }
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Sigmoid(in[0]); }, {mixed}),
            "");
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Tanh(in[0]); }, {mixed}), "");
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Gelu(in[0]); }, {mixed}), "");
}

}  // namespace
}  // namespace sluice::train::ops
