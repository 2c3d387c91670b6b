// The checker itself must catch a wrong backward, or every op test proves
// nothing.
#include "tests/train/gradient_check.h"

#include <gtest/gtest.h>

#include "train/ops/arithmetic.h"

namespace sluice::train::autodiff {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;

// y = x * x with backward `scale * x` (correct when scale is 2).
absl::StatusOr<Tensor> Square(const Tensor& x, float scale) {
  return CustomGradient(
      {x}, [scale](absl::Span<const Tensor> in) -> absl::StatusOr<std::pair<Tensor, BackwardFn>> {
        Tensor x = in[0];
        absl::StatusOr<Tensor> y = ops::Mul(x, x);
        if (!y.ok()) return y.status();
        BackwardFn backward =
            [x, scale](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          Tensor gx = g.Clone();
          for (int64_t i = 0; i < gx.num_elements(); ++i) {
            gx.data<float>()[i] *= scale * x.data<float>()[i];
          }
          return std::vector<std::optional<Tensor>>{gx};
        };
        return std::make_pair(*y, backward);
      });
}

TEST(GradientCheckTest, AcceptsRightAndRejectsWrongGradients) {
  Tensor x = RandomTensor({3, 2}, 1, 0.5f, 1.5f);
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Square(in[0], 2.0f); }, {x}),
            "");
  EXPECT_NE(CheckGradients([](const std::vector<Tensor>& in) { return Square(in[0], 2.1f); }, {x}),
            "");
}

TEST(GradientCheckTest, ReportsMissingGradient) {
  // StopGradient leaves the input without a gradient though the output depends on it.
  EXPECT_NE(CheckGradients([](const std::vector<Tensor>& in)
                               -> absl::StatusOr<Tensor> { return StopGradient(in[0]); },
                           {RandomTensor({2}, 2)}),
            "");
}

}  // namespace
}  // namespace sluice::train::autodiff
