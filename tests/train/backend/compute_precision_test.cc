// Mixed precision (train/backend/compute_precision.h): the policy names, the device checks, and
// on a processor with AVX512-BF16 the CPU's bf16 matmul and convolution: close to float32 but
// not equal to it (so bf16 really ran), and the backward pass under the forward's policy.

#include "train/backend/compute_precision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/ops/conv2d.h"
#include "train/ops/matmul.h"
#include "train/ops/reduce.h"

namespace sluice::train::backend {
namespace {

using ::sluice::train::testing::RandomTensor;

TEST(ComputePrecisionTest, NamesRoundTripAndBadNamesAreErrors) {
  for (Precision p : {Precision::kFloat32, Precision::kMixedBFloat16, Precision::kMixedFloat16}) {
    absl::StatusOr<Precision> parsed = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  absl::StatusOr<Precision> bad = ParsePrecision("float16");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("mixed_float16"), std::string::npos);
}

TEST(ComputePrecisionTest, TheCpuRefusesFloat16AndScopesNest) {
  EXPECT_TRUE(CheckPrecisionSupported(Device::Cpu(), Precision::kFloat32).ok());
  absl::Status f16 = CheckPrecisionSupported(Device::Cpu(), Precision::kMixedFloat16);
  EXPECT_EQ(f16.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f16.message().find("CUDA"), std::string::npos) << f16;
  EXPECT_EQ(CurrentPrecision(), Precision::kFloat32);
  {
    ScopedPrecision outer(Precision::kMixedBFloat16);
    EXPECT_EQ(CurrentPrecision(), Precision::kMixedBFloat16);
    {
      ScopedPrecision inner(Precision::kFloat32);
      EXPECT_EQ(CurrentPrecision(), Precision::kFloat32);
    }
    EXPECT_EQ(CurrentPrecision(), Precision::kMixedBFloat16);
  }
  EXPECT_EQ(CurrentPrecision(), Precision::kFloat32);
}

// max |a - b| / max |b|.
float RelativeDifference(const Tensor& a, const Tensor& b) {
  float diff = 0, scale = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    diff = std::max(diff, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
    scale = std::max(scale, std::fabs(b.data<float>()[i]));
  }
  return diff / scale;
}

class MixedBFloat16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = CheckPrecisionSupported(Device::Cpu(), Precision::kMixedBFloat16);
    if (!s.ok()) GTEST_SKIP() << s.message();
  }
};

// bf16 keeps 8 bits of mantissa: products of inputs in [-1, 1] summed in float32 land within
// about 1% of float32, and a difference of exactly 0 would mean bf16 never ran.
void ExpectBf16Close(const Tensor& bf16, const Tensor& f32, const char* what) {
  const float rel = RelativeDifference(bf16, f32);
  EXPECT_GT(rel, 0.0f) << what << ": identical to float32";
  EXPECT_LT(rel, 2e-2f) << what;
}

TEST_F(MixedBFloat16Test, MatMulAndItsGradientsRunInBf16UnderTheForwardsPolicy) {
  const Tensor a = RandomTensor({32, 300}, 1), b = RandomTensor({300, 40}, 2);
  auto run = [&](Precision p) {
    autodiff::Variable va(a), vb(b);
    autodiff::Tape tape;
    absl::StatusOr<Tensor> out;
    {
      ScopedPrecision scope(p);
      out = ops::MatMul(va.value(), vb.value());
    }
    EXPECT_TRUE(out.ok()) << out.status();
    // The gradient runs outside the scope: the closure brings the forward's policy back.
    absl::StatusOr<Tensor> loss = ops::Sum(*out);
    EXPECT_TRUE(loss.ok());
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads =
        tape.Gradient(*loss, {va.value(), vb.value()});
    EXPECT_TRUE(grads.ok()) << grads.status();
    return std::vector<Tensor>{*out, *(*grads)[0], *(*grads)[1]};
  };
  const std::vector<Tensor> f32 = run(Precision::kFloat32);
  const std::vector<Tensor> bf16 = run(Precision::kMixedBFloat16);
  ExpectBf16Close(bf16[0], f32[0], "forward");
  ExpectBf16Close(bf16[1], f32[1], "grad a");
  ExpectBf16Close(bf16[2], f32[2], "grad b");
}

TEST_F(MixedBFloat16Test, ConvolutionAndItsGradientsRunInBf16) {
  const Tensor x = RandomTensor({4, 12, 12, 8}, 3), w = RandomTensor({3, 3, 8, 16}, 4);
  auto run = [&](Precision p) {
    autodiff::Variable vx(x), vw(w);
    autodiff::Tape tape;
    absl::StatusOr<Tensor> out;
    {
      ScopedPrecision scope(p);
      out = ops::Conv2D(vx.value(), vw.value(), {.padding = ops::Padding::kSame});
    }
    EXPECT_TRUE(out.ok()) << out.status();
    absl::StatusOr<Tensor> loss = ops::Sum(*out);
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads =
        tape.Gradient(*loss, {vx.value(), vw.value()});
    EXPECT_TRUE(grads.ok()) << grads.status();
    return std::vector<Tensor>{*out, *(*grads)[0], *(*grads)[1]};
  };
  const std::vector<Tensor> f32 = run(Precision::kFloat32);
  const std::vector<Tensor> bf16 = run(Precision::kMixedBFloat16);
  ExpectBf16Close(bf16[0], f32[0], "forward");
  ExpectBf16Close(bf16[1], f32[1], "grad input");
  ExpectBf16Close(bf16[2], f32[2], "grad filter");
}

}  // namespace
}  // namespace sluice::train::backend
