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

TEST(ActivationsTest, SoftplusIsStable) {
  // log(1 + e^x): log 2 = 0.6931472, log(1 + e) = 1.3132616, log(1 + 1/e) = 0.31326169.
  EXPECT_THAT(Values(*Softplus(T({0, 1, -1}, {3}))),
              Pointwise(FloatNear(1e-6), {0.6931472f, 1.3132616f, 0.31326169f}));
  // e^100 overflows float32, and 1 + e^-30 rounds to 1: softplus(100) = 100 and
  // softplus(-30) = e^-30 (1 - ...) = 9.357623e-14 all the same.
  std::vector<float> v = Values(*Softplus(T({100, -30}, {2})));
  EXPECT_FLOAT_EQ(v[0], 100.0f);
  EXPECT_NEAR(v[1], 9.357623e-14, 1e-18);
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
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Softplus(in[0]); }, {mixed}),
            "");
  // Its gradient is sigmoid(x): 0.5 at 0, sigmoid(-40) = 4.2e-18 without overflow at +-40.
  Tensor x = T({0, 40, -40}, {3});
  autodiff::Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*Softplus(x), {x});
  EXPECT_THAT(Values(*g[0]), Pointwise(FloatNear(1e-7), {0.5f, 1.0f, 0.0f}));
}

}  // namespace
}  // namespace sluice::train::ops
