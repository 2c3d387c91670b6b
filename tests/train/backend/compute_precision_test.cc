// Mixed precision (train/backend/compute_precision.h): the policy names, the device checks, and
// on a processor with AVX512-BF16 the CPU's bf16 matmul and convolution: close to float32 but
// not equal to it (so bf16 really ran), the backward pass under the forward's policy, and the
// operands converted once (Backend::ComputeOperand) giving the kernels' own results bit for bit.

#include "train/backend/compute_precision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "core/float16.h"
#include "core/status_macros.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/backend/backend.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/models/model_zoo.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cast.h"
#include "train/ops/concat.h"
#include "train/ops/conv2d.h"
#include "train/ops/dropout.h"
#include "train/ops/matmul.h"
#include "train/ops/pad.h"
#include "train/ops/pool.h"
#include "train/ops/reduce.h"
#include "train/ops/reshape.h"
#include "train/ops/softmax.h"
#include "train/ops/transpose.h"

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

// Outside mixed_bfloat16 the operand is the tensor itself; under it, a bfloat16 copy rounded to
// nearest even (core/float16.h's rule), and a cast back gives those values exactly.
// The bias fused into the bf16 convolution (oneDNN's bf16 primitives with a float32 bias), and
// its gradient from the bf16 output gradient, summed in float32.
TEST_F(MixedBFloat16Test, ConvolutionWithBiasRunsInBf16) {
  const Tensor x = RandomTensor({4, 12, 12, 8}, 14), w = RandomTensor({3, 3, 8, 16}, 15),
               b = RandomTensor({16}, 16);
  auto run = [&](Precision p) {
    autodiff::Variable vx(x), vw(w), vb(b);
    autodiff::Tape tape;
    absl::StatusOr<Tensor> out;
    {
      ScopedPrecision scope(p);
      out = ops::Conv2D(vx.value(), vw.value(), vb.value(), {.padding = ops::Padding::kSame});
    }
    EXPECT_TRUE(out.ok()) << out.status();
    absl::StatusOr<Tensor> loss = ops::Sum(*ops::Mul(*out, RandomTensor(out->shape(), 17)));
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads =
        tape.Gradient(*loss, {vx.value(), vw.value(), vb.value()});
    EXPECT_TRUE(grads.ok()) << grads.status();
    return std::vector<Tensor>{*out, *(*grads)[0], *(*grads)[1], *(*grads)[2]};
  };
  const std::vector<Tensor> f32 = run(Precision::kFloat32);
  const std::vector<Tensor> bf16 = run(Precision::kMixedBFloat16);
  ExpectBf16Close(bf16[0], f32[0], "forward");
  ExpectBf16Close(bf16[1], f32[1], "grad x");
  ExpectBf16Close(bf16[2], f32[2], "grad w");
  ExpectBf16Close(bf16[3], f32[3], "grad bias");
}

TEST_F(MixedBFloat16Test, ComputeOperandIsARoundedBFloat16CopyOnlyUnderTheMixedPolicy) {
  Backend& cpu = cpu::CpuBackend::Get();
  Tensor x = RandomTensor({3, 70001}, 5);
  x.data<float>()[0] = 1.0f + 1.0f / 256;                   // a tie: rounds to even, 1.0
  x.data<float>()[1] = 1.0f + 3.0f / 256;                   // a tie: rounds to even, 1 + 4/256
  x.data<float>()[2] = -(1.0f + 1.0f / 256 + 1.0f / 4096);  // past the tie: away from 1
  absl::StatusOr<Tensor> same = cpu.ComputeOperand(x);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->raw_data(), x.raw_data());
  EXPECT_FALSE(cpu.ReadsBFloat16Operands());

  ScopedPrecision scope(Precision::kMixedBFloat16);
  EXPECT_TRUE(cpu.ReadsBFloat16Operands());
  absl::StatusOr<Tensor> copy = cpu.ComputeOperand(x);
  ASSERT_TRUE(copy.ok()) << copy.status();
  ASSERT_EQ(copy->dtype(), DType::kBFloat16);
  EXPECT_EQ(copy->shape(), x.shape());
  const uint16_t* bits = static_cast<const uint16_t*>(copy->raw_data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    wrong += bits[i] != BFloat16::FromFloat(x.data<float>()[i]);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(BFloat16::ToFloat(bits[0]), 1.0f);
  EXPECT_EQ(BFloat16::ToFloat(bits[1]), 1.0f + 4.0f / 256);
  EXPECT_EQ(BFloat16::ToFloat(bits[2]), -(1.0f + 2.0f / 256));
  Tensor back(DType::kFloat32, x.shape());
  ASSERT_TRUE(cpu.Cast(*copy, back).ok());
  for (int64_t i = 0; i < x.num_elements(); i += 997) {
    EXPECT_EQ(back.data<float>()[i], BFloat16::ToFloat(bits[i])) << i;
  }
  // Another type is refused with a message, not converted.
  Tensor ints(DType::kInt32, x.shape());
  absl::Status refused = cpu.Cast(*copy, ints);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("bfloat16"), std::string::npos) << refused;
}

// The kernels given bfloat16 operands (converted once by the op) compute exactly what they
// compute when they convert float32 operands themselves, whatever the policy around them; a
// transposed operand stays a view after conversion.
TEST_F(MixedBFloat16Test, KernelsGivenConvertedOperandsMatchTheirOwnConversionBitForBit) {
  Backend& cpu = cpu::CpuBackend::Get();
  auto converted = [&](const Tensor& t) {
    ScopedPrecision scope(Precision::kMixedBFloat16);
    absl::StatusOr<Tensor> c = cpu.ComputeOperand(t);
    EXPECT_TRUE(c.ok() && c->dtype() == DType::kBFloat16);
    return *c;
  };
  const Tensor a = RandomTensor({300, 32}, 6), b = RandomTensor({40, 300}, 7);
  Tensor own(DType::kFloat32, Shape{32, 40}), given(DType::kFloat32, Shape{32, 40});
  {
    ScopedPrecision scope(Precision::kMixedBFloat16);
    ASSERT_TRUE(cpu.MatMul(a, true, b, true, own).ok());
  }
  ASSERT_TRUE(cpu.MatMul(converted(a), true, converted(b), true, given).ok());
  EXPECT_TRUE(own.Equals(given)) << "matmul";

  ConvGeometry geo;
  geo.n = 4, geo.h = 12, geo.w = 12, geo.c = 8, geo.kh = 3, geo.kw = 3, geo.o = 16;
  geo.oh = 6, geo.ow = 6, geo.stride_h = 2, geo.stride_w = 2, geo.pad_bottom = 1, geo.pad_right = 1;
  const Tensor x = RandomTensor({4, 12, 12, 8}, 8), w = RandomTensor({3, 3, 8, 16}, 9),
               dy = RandomTensor({4, 6, 6, 16}, 10);
  Tensor y_own(DType::kFloat32, Shape{4, 6, 6, 16}), y_given(DType::kFloat32, Shape{4, 6, 6, 16});
  Tensor dx_own(DType::kFloat32, x.shape()), dx_given(DType::kFloat32, x.shape());
  Tensor dw_own(DType::kFloat32, w.shape()), dw_given(DType::kFloat32, w.shape());
  {
    ScopedPrecision scope(Precision::kMixedBFloat16);
    ASSERT_TRUE(cpu.Conv2DForward(geo, x, w, y_own).ok());
    ASSERT_TRUE(cpu.Conv2DBackwardData(geo, dy, w, dx_own).ok());
    ASSERT_TRUE(cpu.Conv2DBackwardFilter(geo, x, dy, dw_own).ok());
  }
  const Tensor xc = converted(x), dyc = converted(dy);
  ASSERT_TRUE(cpu.Conv2DForward(geo, xc, w, y_given).ok());
  ASSERT_TRUE(cpu.Conv2DBackwardData(geo, dyc, w, dx_given).ok());
  ASSERT_TRUE(cpu.Conv2DBackwardFilter(geo, xc, dyc, dw_given).ok());
  EXPECT_TRUE(y_own.Equals(y_given)) << "conv forward";
  EXPECT_TRUE(dx_own.Equals(dx_given)) << "conv backward data";
  EXPECT_TRUE(dw_own.Equals(dw_given)) << "conv backward filter";
  // And they are bf16 results: float32 kernels give others.
  Tensor y_f32(DType::kFloat32, y_own.shape());
  ASSERT_TRUE(cpu.Conv2DForward(geo, x, w, y_f32).ok());
  EXPECT_GT(RelativeDifference(y_own, y_f32), 0.0f);
}

// Conv2DOptions::keep_compute_dtype: under mixed_bfloat16 the output is the bfloat16 rounding of
// what the same convolution writes in float32, and a bfloat16 input gets a bfloat16 gradient
// (the float32 one, rounded); under float32 nothing changes.
TEST_F(MixedBFloat16Test, ConvolutionKeepsBFloat16ForItsConsumerUnderTheMixedPolicy) {
  const Tensor x = RandomTensor({4, 12, 12, 8}, 11, -1.0f, 1.0f),
               w = RandomTensor({3, 3, 8, 16}, 12);
  auto run = [&](bool keep, Precision p, const Tensor& input) {
    autodiff::Variable vx(input), vw(w);
    autodiff::Tape tape;
    ScopedPrecision scope(p);
    absl::StatusOr<Tensor> out = ops::Conv2D(
        vx.value(), vw.value(), {.padding = ops::Padding::kSame, .keep_compute_dtype = keep});
    EXPECT_TRUE(out.ok()) << out.status();
    absl::StatusOr<Tensor> loss = ops::Sum(*ops::Cast(*out, DType::kFloat32));
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads =
        tape.Gradient(*loss, {vx.value(), vw.value()});
    EXPECT_TRUE(grads.ok()) << grads.status();
    return std::vector<Tensor>{*out, *(*grads)[0], *(*grads)[1]};
  };
  ScopedPrecision mixed(Precision::kMixedBFloat16);
  const std::vector<Tensor> kept = run(true, Precision::kMixedBFloat16, x),
                            plain = run(false, Precision::kMixedBFloat16, x);
  ASSERT_EQ(kept[0].dtype(), DType::kBFloat16);
  ASSERT_EQ(plain[0].dtype(), DType::kFloat32);
  absl::StatusOr<Tensor> rounded = cpu::CpuBackend::Get().ComputeOperand(plain[0]);
  ASSERT_TRUE(rounded.ok());
  EXPECT_TRUE(kept[0].Equals(*rounded)) << "the output is float32's, rounded once";
  EXPECT_EQ(kept[1].dtype(), DType::kFloat32) << "a float32 input's gradient";
  // A bfloat16 input (a batch norm's output) gets its gradient in bfloat16.
  absl::StatusOr<Tensor> x16 = cpu::CpuBackend::Get().ComputeOperand(x);
  ASSERT_TRUE(x16.ok());
  const std::vector<Tensor> from16 = run(true, Precision::kMixedBFloat16, *x16);
  ASSERT_EQ(from16[1].dtype(), DType::kBFloat16);
  const std::vector<Tensor> from32 = run(true, Precision::kMixedBFloat16, x);
  absl::StatusOr<Tensor> grad_rounded = cpu::CpuBackend::Get().ComputeOperand(from32[1]);
  ASSERT_TRUE(grad_rounded.ok());
  EXPECT_TRUE(from16[1].Equals(*grad_rounded)) << "the input gradient is float32's, rounded";
  EXPECT_TRUE(from16[2].Equals(from32[2])) << "the filter gradient";
  // Under float32 the option changes nothing.
  const std::vector<Tensor> f32 = run(true, Precision::kFloat32, x);
  EXPECT_EQ(f32[0].dtype(), DType::kFloat32);
}

// The residual block keeps its activations in bfloat16 under mixed_bfloat16 (its segments'
// outputs and its own among them); recomputing the block gives the same bits, and the output is
// close to the float32 block's.
TEST_F(MixedBFloat16Test, ResidualBlocksKeepBFloat16InsideAndRecomputeTheSameBits) {
  const Tensor x = RandomTensor({2, 8, 8, 8}, 13, -1.0f, 1.0f);
  auto run = [&](bool recompute, Precision p = Precision::kMixedBFloat16) {
    layers::ResidualBlock block(8, 16, {.stride = 2, .seed = 3, .recompute = recompute});
    autodiff::Variable vx(x);
    autodiff::Tape tape;
    ScopedPrecision scope(p);
    absl::StatusOr<Tensor> y = block.Forward(vx.value(), /*training=*/true);
    EXPECT_TRUE(y.ok()) << y.status();
    absl::StatusOr<Tensor> loss = ops::Sum(*y);
    std::vector<Tensor> sources = {vx.value()};
    for (autodiff::Variable* v : block.TrainableVariables()) sources.push_back(v->value());
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads = tape.Gradient(*loss, sources);
    EXPECT_TRUE(grads.ok()) << grads.status();
    std::vector<Tensor> out = {*y};
    for (const auto& g : *grads) out.push_back(*g);
    return out;
  };
  const std::vector<Tensor> kept = run(false), recomputed = run(true);
  ASSERT_EQ(kept.size(), recomputed.size());
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_TRUE(kept[i].Equals(recomputed[i])) << i;
  const std::vector<Tensor> f32 = run(false, Precision::kFloat32);
  ASSERT_EQ(kept[0].dtype(), DType::kBFloat16) << "the output, for the next block";
  ExpectBf16Close(*ops::Cast(kept[0], DType::kFloat32), f32[0], "block output");
  ExpectBf16Close(kept[1], f32[1], "input gradient");
}

// The zoo ResNets' stem convolution keeps bfloat16 (Conv2DOptions::keep_compute_dtype) under
// mixed_bfloat16, so its batch norm and ReLU (one fused kernel) read and write bfloat16, and the
// first block reads that; under float32 nothing changes.
TEST_F(MixedBFloat16Test, TheResNetStemKeepsBFloat16ForItsBatchNormAndReLU) {
  for (const std::string& name : models::ResNetNames()) {
    SCOPED_TRACE(name);
    auto model = models::MakeModel(name, {.height = 8, .width = 8, .channels = 1, .classes = 3}, 5);
    ASSERT_TRUE(model.ok()) << model.status();
    auto* seq = dynamic_cast<layers::Sequential*>(model->get());
    ASSERT_NE(seq, nullptr);
    const Tensor x = RandomTensor({2, 8, 8, 1}, 17, 0.0f, 1.0f);
    for (Precision p : {Precision::kMixedBFloat16, Precision::kFloat32}) {
      ScopedPrecision scope(p);
      const DType want = p == Precision::kFloat32 ? DType::kFloat32 : DType::kBFloat16;
      absl::StatusOr<Tensor> conv = seq->module(0).Forward(x, /*training=*/true);
      ASSERT_TRUE(conv.ok()) << conv.status();
      EXPECT_EQ(conv->dtype(), want);
      ASSERT_TRUE(seq->module(1).FusesRelu());
      absl::StatusOr<Tensor> normed = seq->module(1).ForwardRelu(*conv, /*training=*/true);
      ASSERT_TRUE(normed.ok()) << normed.status();
      EXPECT_EQ(normed->dtype(), want);
      absl::StatusOr<Tensor> logits = (*model)->Forward(x, /*training=*/true);
      ASSERT_TRUE(logits.ok()) << logits.status();
      EXPECT_EQ(logits->dtype(), DType::kFloat32);
    }
  }
}

// What follows a block whose output is bfloat16 reads it as float32 (ops::AutoCast), forward and
// backward: every float32-only op, each giving the float32 result of the widened values and a
// gradient that reaches the block's input.
TEST_F(MixedBFloat16Test, OpsAfterABFloat16BlockReadItAsFloat32) {
  using OpFn = std::function<absl::StatusOr<Tensor>(const Tensor&)>;
  const std::vector<std::pair<const char*, OpFn>> consumers = {
      {"Relu", [](const Tensor& y) { return ops::Relu(y); }},
      {"Add", [](const Tensor& y) { return ops::Add(y, y); }},
      {"Mean",
       [](const Tensor& y) {
         return ops::Mean(y, {1, 2});
       }},
      {"Max",
       [](const Tensor& y) {
         return ops::Max(y, {1, 2});
       }},
      {"MaxPool2D", [](const Tensor& y) { return ops::MaxPool2D(y); }},
      {"AvgPool2D", [](const Tensor& y) { return ops::AvgPool2D(y); }},
      {"Flatten + MatMul",
       [](const Tensor& y) -> absl::StatusOr<Tensor> {
         SLUICE_ASSIGN_OR_RETURN(Tensor flat, ops::Flatten(y));
         return ops::MatMul(flat, RandomTensor({flat.dim(1), 3}, 21));
       }},
      {"Softmax", [](const Tensor& y) { return ops::Softmax(y); }},
      {"Concat",
       [](const Tensor& y) {
         return ops::Concat({y, y}, 3);
       }},
      {"ZeroPad",
       [](const Tensor& y) {
         return ops::ZeroPad(y, {{0, 0}, {1, 1}, {1, 1}, {0, 0}});
       }},
      {"Transpose",
       [](const Tensor& y) {
         return ops::Transpose(y, {0, 3, 1, 2});
       }},
      {"Dropout", [](const Tensor& y) { return ops::Dropout(y, {.rate = 0.25f, .seed = 7}); }},
  };
  const Tensor x = RandomTensor({2, 8, 8, 8}, 14, -1.0f, 1.0f);
  layers::ResidualBlock block(8, 8, {.seed = 5});
  for (const auto& [name, op] : consumers) {
    autodiff::Variable vx(x);
    autodiff::Tape tape;
    ScopedPrecision scope(Precision::kMixedBFloat16);
    absl::StatusOr<Tensor> y = block.Forward(vx.value(), /*training=*/true);
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->dtype(), DType::kBFloat16);
    absl::StatusOr<Tensor> out = op(*y);
    ASSERT_TRUE(out.ok()) << name << ": " << out.status();
    EXPECT_EQ(out->dtype(), DType::kFloat32) << name;
    // The same op on the widened values, untracked: the same bits.
    absl::StatusOr<Tensor> widened = ops::Cast(*y, DType::kFloat32);
    absl::StatusOr<Tensor> expected = op(*widened);
    ASSERT_TRUE(expected.ok()) << name;
    EXPECT_TRUE(out->Equals(*expected)) << name;
    absl::StatusOr<std::vector<std::optional<Tensor>>> g =
        tape.Gradient(*ops::Sum(*out), {vx.value()});
    ASSERT_TRUE(g.ok()) << name << ": " << g.status();
    EXPECT_EQ((*g)[0]->dtype(), DType::kFloat32) << name;
    EXPECT_GT(*ops::Sum(*ops::Mul(*(*g)[0], *(*g)[0]))->data<float>(), 0.0f) << name;
  }
}

}  // namespace
}  // namespace sluice::train::backend
