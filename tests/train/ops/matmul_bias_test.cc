// ops::MatMulBias (a dense layer's matmul, bias and ReLU in one kernel) against the three ops it
// replaces, and the Dense + ReLU fusion that Sequential makes with it.
#include "train/ops/matmul_bias.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/sequential_fusion.h"
#include "tests/train/skip_without_bfloat16.h"
#include "train/autodiff/tape.h"
#include "train/backend/compute_precision.h"
#include "train/layers/dense.h"
#include "train/layers/relu.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cast.h"
#include "train/ops/matmul.h"
#include "train/ops/reduce.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The value of f(a, b, bias) and the gradients of sum(w * f) for the three.
struct MatMulBiasDifferentiated {
  Tensor out;
  std::vector<Tensor> grads;
};
template <typename Fn>
MatMulBiasDifferentiated DifferentiateMatMulBias(Fn f, const std::vector<Tensor>& in,
                                                 const Tensor& w) {
  autodiff::Tape tape;
  for (const Tensor& t : in) tape.Watch(t);
  absl::StatusOr<Tensor> out = f(in[0], in[1], in[2]);
  EXPECT_TRUE(out.ok()) << out.status();
  absl::StatusOr<std::vector<std::optional<Tensor>>> g = tape.Gradient(*Sum(*Mul(*out, w)), in);
  EXPECT_TRUE(g.ok()) << g.status();
  MatMulBiasDifferentiated d{*out, {}};
  for (const auto& t : *g) d.grads.push_back(*t);
  return d;
}

void ExpectTheBitsOfTheUnfusedOps(backend::Precision precision) {
  backend::ScopedPrecision scope(precision);
  // Sizes past one vector and one block of oneDNN's kernels, and a bias that makes some sums
  // negative.
  const std::vector<Tensor> in = {RandomTensor({67, 45}, 1), RandomTensor({45, 37}, 2),
                                  RandomTensor({37}, 3, -0.5f, 0.5f)};
  const Tensor w = RandomTensor({67, 37}, 4);
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "linear");
    const MatMulBiasDifferentiated fused =
        DifferentiateMatMulBias([relu](const Tensor& a, const Tensor& b,
                                       const Tensor& bias) { return MatMulBias(a, b, bias, relu); },
                                in, w);
    const MatMulBiasDifferentiated plain = DifferentiateMatMulBias(
        [relu](const Tensor& a, const Tensor& b, const Tensor& bias) -> absl::StatusOr<Tensor> {
          absl::StatusOr<Tensor> z = Add(*MatMul(a, b), bias);
          return relu ? Relu(*z) : z;
        },
        in, w);
    EXPECT_TRUE(fused.out.Equals(plain.out));
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(fused.grads[i].Equals(plain.grads[i])) << i;
    if (relu) {  // the ReLU did cut: some outputs are 0, some are not
      const std::vector<float> v = Values(fused.out);
      EXPECT_GT(std::count(v.begin(), v.end(), 0.0f), 100);
      EXPECT_LT(std::count(v.begin(), v.end(), 0.0f), 67 * 37 - 100);
    }
  }
}

TEST(MatMulBiasTest, GivesTheBitsOfMatMulAddRelu) {
  ExpectTheBitsOfTheUnfusedOps(backend::Precision::kFloat32);
}

TEST(MatMulBiasTest, GivesTheBitsOfTheUnfusedOpsUnderMixedBFloat16) {
  SLUICE_SKIP_WITHOUT_CPU_BFLOAT16();
  ExpectTheBitsOfTheUnfusedOps(backend::Precision::kMixedBFloat16);
}

TEST(MatMulBiasTest, Values) {
  // [[1, 2], [-1, 0]] x [[1, -1], [1, 1]] + [0.5, -2] = [[3.5, -1], [-0.5, -1]]
  const Tensor a = T({1, 2, -1, 0}, {2, 2}), b = T({1, -1, 1, 1}, {2, 2});
  const Tensor bias = T({0.5f, -2}, {2});
  EXPECT_THAT(Values(*MatMulBias(a, b, bias, false)), ElementsAre(3.5f, -1, -0.5f, -1));
  EXPECT_THAT(Values(*MatMulBias(a, b, bias, true)), ElementsAre(3.5f, 0, 0, 0));
}

TEST(MatMulBiasTest, GradientsMatchFiniteDifferences) {
  // Outputs clear of the ReLU's kink by more than the step.
  const std::vector<Tensor> in = {T({1, 2, -1, 0.5f, 0.25f, -2}, {2, 3}),
                                  T({1, -1, 0.5f, 1, -0.5f, 2}, {3, 2}), T({0.3f, -0.2f}, {2})};
  for (const bool relu : {false, true}) {
    EXPECT_EQ(
        CheckGradients(
            [relu](const std::vector<Tensor>& x) { return MatMulBias(x[0], x[1], x[2], relu); },
            in),
        "")
        << (relu ? "relu" : "linear");
  }
}

TEST(MatMulBiasTest, RefusesMismatchedShapes) {
  const Tensor a = T({1, 2, 3, 4}, {2, 2});
  absl::Status s = MatMulBias(a, a, T({1, 2, 3}, {3}), true).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("want a [m, k], b [k, n] and bias [n], got [2, 2], [2, 2] "
                                     "and [3]"));
  EXPECT_EQ(MatMulBias(a, T({1, 2}, {2, 1}), T({1, 2}, {2}), false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MatMulBias(*Cast(a, DType::kInt32), a, T({1, 2}, {2}), false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Sequential runs a linear Dense and the plain ReLU after it as one op: the values and
// gradients of the two layers run one by one (a Sequential of the same layers with a
// Sequential around each, which keeps them apart).
TEST(MatMulBiasTest, SequentialFusesDenseAndReluWithTheSameBits) {
  auto make = [](bool apart) {
    std::vector<std::unique_ptr<layers::Module>> layers;
    layers.push_back(std::make_unique<layers::Dense>(9, 16, layers::DenseOptions{.seed = 5}));
    layers.push_back(std::make_unique<layers::ReLU>());
    layers.push_back(std::make_unique<layers::Dense>(16, 4, layers::DenseOptions{.seed = 6}));
    return testing::SequentialOf(std::move(layers), apart);
  };
  auto fused = make(false), apart = make(true);
  EXPECT_TRUE(fused->module(0).FusesRelu());
  const Tensor x = RandomTensor({11, 9}, 7), w = RandomTensor({11, 4}, 8);
  const std::vector<Tensor> a = testing::OutputAndGradients(*fused, x, w),
                            b = testing::OutputAndGradients(*apart, x, w);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].Equals(b[i])) << i;
}

}  // namespace
}  // namespace sluice::train::ops
