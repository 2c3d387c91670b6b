#include "train/autodiff/tape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "train/autodiff/variable.h"
#include "train/backend/cpu/cpu_allocator.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::autodiff {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(TapeTest, GradientOfProductAndSum) {
  Tensor x = T({2, 3}, {2});
  Tensor y = T({5, 7}, {2});
  Tape tape;
  tape.Watch(x);
  tape.Watch(y);
  Tensor xy = *ops::Mul(x, y);
  Tensor z = *ops::Add(xy, x);  // z = x*y + x
  auto grads = *tape.Gradient(z, {x, y});
  ASSERT_TRUE(grads[0] && grads[1]);
  EXPECT_THAT(Values(*grads[0]), ElementsAre(6, 8));  // y + 1
  EXPECT_THAT(Values(*grads[1]), ElementsAre(2, 3));  // x
}

TEST(TapeTest, UnwatchedTensorGetsNoGradient) {
  Tensor x = T({1}, {1});
  Tensor c = T({4}, {1});
  Tape tape;
  tape.Watch(x);
  Tensor z = *ops::Mul(x, x);
  auto grads = *tape.Gradient(z, {x, c});
  ASSERT_TRUE(grads[0]);
  EXPECT_THAT(Values(*grads[0]), ElementsAre(2));
  EXPECT_FALSE(grads[1]);
}

TEST(TapeTest, WatchedButUnusedSourceGetsNullopt) {
  Tensor x = T({1}, {1});
  Tensor w = T({3}, {1});
  Tape tape;
  tape.Watch(x);
  tape.Watch(w);
  Tensor z = *ops::Mul(x, x);
  auto grads = *tape.Gradient(z, {w});
  EXPECT_FALSE(grads[0]);
}

TEST(TapeTest, VariablesAreWatchedAutomatically) {
  Variable v(T({3}, {1}), "v");
  Variable frozen(T({5}, {1}), "frozen", /*trainable=*/false);
  Tape tape;
  Tensor z = *ops::Mul(v.value(), frozen.value());
  auto grads = *tape.Gradient(z, {v.value(), frozen.value()});
  ASSERT_TRUE(grads[0]);
  EXPECT_THAT(Values(*grads[0]), ElementsAre(5));
  EXPECT_FALSE(grads[1]);
}

TEST(TapeTest, WatchAccessedVariablesOff) {
  Variable v(T({3}, {1}));
  Tape tape({.watch_accessed_variables = false});
  Tensor z = *ops::Mul(v.value(), v.value());
  auto grads = *tape.Gradient(z, {v.value()});
  EXPECT_FALSE(grads[0]);
}

TEST(TapeTest, NonPersistentTapeRefusesSecondGradient) {
  Tensor x = T({2}, {1});
  Tape tape;
  tape.Watch(x);
  Tensor z = *ops::Mul(x, x);
  ASSERT_TRUE(tape.Gradient(z, {x}).ok());
  auto again = tape.Gradient(z, {x});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(TapeTest, PersistentTapeGivesSeveralGradients) {
  Tensor x = T({2}, {1});
  Tape tape({.persistent = true});
  tape.Watch(x);
  Tensor y = *ops::Mul(x, x);  // x^2
  Tensor z = *ops::Mul(y, x);  // x^3
  auto gy = *tape.Gradient(y, {x});
  auto gz = *tape.Gradient(z, {x});
  EXPECT_THAT(Values(*gy[0]), ElementsAre(4));   // 2x
  EXPECT_THAT(Values(*gz[0]), ElementsAre(12));  // 3x^2
}

TEST(TapeTest, GradientWithRespectToIntermediate) {
  Tensor x = T({2}, {1});
  Tape tape;
  tape.Watch(x);
  Tensor y = *ops::Mul(x, x);
  Tensor z = *ops::Mul(y, y);  // y^2
  auto g = *tape.Gradient(z, {y, x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(8));   // 2y = 8
  EXPECT_THAT(Values(*g[1]), ElementsAre(32));  // 4x^3
}

TEST(TapeTest, StopGradientBlocksFlow) {
  Tensor x = T({3}, {1});
  Tape tape;
  tape.Watch(x);
  Tensor y = *ops::Mul(x, x);
  Tensor z = *ops::Mul(*StopGradient(y), x);  // treated as 9 * x
  auto g = *tape.Gradient(z, {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(9));
}

TEST(TapeTest, OutputGradientSeedsBackward) {
  Tensor x = T({1, 2}, {2});
  Tape tape;
  tape.Watch(x);
  Tensor y = *ops::Mul(x, x);
  auto g = *tape.Gradient(y, {x}, T({10, 100}, {2}));
  EXPECT_THAT(Values(*g[0]), ElementsAre(20, 400));
}

TEST(TapeTest, OutputGradientShapeMismatchIsError) {
  Tensor x = T({1, 2}, {2});
  Tape tape;
  tape.Watch(x);
  Tensor y = *ops::Mul(x, x);
  EXPECT_EQ(tape.Gradient(y, {x}, T({1}, {1})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TapeTest, CustomGradientReplacesBackward) {
  // Forward is the identity; the custom backward clips the gradient to [-1, 1].
  Tensor x = T({2, -3}, {2});
  Tape tape;
  tape.Watch(x);
  auto clip = [](absl::Span<const Tensor> in) -> absl::StatusOr<std::pair<Tensor, BackwardFn>> {
    BackwardFn backward =
        [](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
      Tensor out = g.Clone();
      for (float& v : out.flat<float>()) v = std::max(-1.0f, std::min(1.0f, v));
      return std::vector<std::optional<Tensor>>{out};
    };
    return std::make_pair(in[0], backward);
  };
  Tensor y = *CustomGradient({x}, clip);
  Tensor z = *ops::Mul(y, T({5, -0.5f}, {2}));
  auto g = *tape.Gradient(z, {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(1, -0.5f));
}

TEST(TapeTest, NestedTapesEachRecord) {
  Tensor x = T({3}, {1});
  Tape outer;
  outer.Watch(x);
  Tensor y;
  {
    Tape inner;
    inner.Watch(x);
    y = *ops::Mul(x, x);
    auto g = *inner.Gradient(y, {x});
    EXPECT_THAT(Values(*g[0]), ElementsAre(6));
  }
  Tensor z = *ops::Mul(y, x);
  auto g = *outer.Gradient(z, {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(27));
}

TEST(TapeTest, SourceListedTwiceGetsGradientTwice) {
  Tensor x = T({3}, {1});
  Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*ops::Mul(x, x), {x, x});
  ASSERT_TRUE(g[0] && g[1]);
  EXPECT_THAT(Values(*g[0]), ElementsAre(6));
  EXPECT_THAT(Values(*g[1]), ElementsAre(6));
  EXPECT_FALSE(g[0]->SharesBufferWith(*g[1]));
}

TEST(TapeTest, SameTensorTwiceInOneOpAccumulates) {
  Tensor x = T({3}, {1});
  Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*ops::Add(x, x), {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(2));
}

TEST(TapeTest, NothingRecordedWithoutTape) {
  Tensor x = T({3}, {1});
  EXPECT_FALSE(ShouldRecord({x}));
  Tape tape;
  EXPECT_FALSE(ShouldRecord({x}));
  tape.Watch(x);
  EXPECT_TRUE(ShouldRecord({x}));
  PauseRecording pause;
  EXPECT_FALSE(ShouldRecord({x}));
}

// A chain h1 = a * x, h2 = b * h1, out = c * h2: walking backwards, c's gradient is final after
// the last op, b's after the second, a's after the first. The hook reports each source once, as
// soon as its gradient is final (c before the walk reaches a's op), with the very tensor
// Gradient() returns; an unreached source is not reported.
TEST(TapeTest, GradientReadyHookReportsEachSourceOnceWhenFinal) {
  Tensor x = T({1, 2}, {2});
  Tensor a = T({3, 4}, {2});
  Tensor b = T({5, 6}, {2});
  Tensor c = T({7, 8}, {2});
  Tensor unused = T({1, 1}, {2});
  Tape tape;
  for (const Tensor& t : {a, b, c, unused}) tape.Watch(t);
  Tensor h1 = *ops::Mul(a, x);
  Tensor h2 = *ops::Mul(b, h1);
  Tensor out = *ops::Mul(c, h2);
  std::vector<size_t> order;
  std::vector<const void*> reported(4, nullptr);
  absl::StatusOr<std::vector<std::optional<Tensor>>> grads =
      tape.Gradient(out, {a, b, c, unused}, std::nullopt, [&](size_t s, const Tensor& g) {
        order.push_back(s);
        reported[s] = g.raw_data();
      });
  ASSERT_TRUE(grads.ok());
  EXPECT_THAT(order, ElementsAre(2, 1, 0));
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(reported[s], (*grads)[s]->raw_data()) << s;
  EXPECT_FALSE((*grads)[3].has_value());
  EXPECT_THAT(Values(*(*grads)[0]), ElementsAre(1 * 5 * 7, 2 * 6 * 8));  // x * b * c
  EXPECT_THAT(Values(*(*grads)[2]), ElementsAre(3 * 5, 4 * 6 * 2));      // h2 = b * a * x
}

// What the tape keeps: an op's output lives only as long as someone holds it (a backward function
// that captured it, the caller), not because the tape recorded it.
TEST(TapeTest, AnOutputNoBackwardCapturedIsFreed) {
  Tensor a = T({1, 2}, {2}), b = T({3, 4}, {2});
  Tape tape;
  tape.Watch(a);
  tape.Watch(b);
  Tensor sum = *ops::Add(a, b);  // a + b of one shape reads neither operand backward
  std::weak_ptr<Buffer> sum_buffer = sum.buffer();
  Tensor y = *ops::Relu(sum);  // relu differentiates from its output: it keeps y, not sum
  sum = Tensor();
  EXPECT_TRUE(sum_buffer.expired());
  auto grads = *tape.Gradient(y, {a, b});
  ASSERT_TRUE(grads[0] && grads[1]);
  EXPECT_THAT(Values(*grads[0]), ElementsAre(1, 1));
  EXPECT_THAT(Values(*grads[1]), ElementsAre(1, 1));
}

TEST(TapeTest, ANewTensorAtAFreedOutputsAddressIsNotTracked) {
  // 64 KiB: the CPU allocator's cache hands the freed block straight back.
  const Shape shape{128, 128};
  Tensor a = Tensor::Zeros(DType::kFloat32, shape), b = Tensor::Zeros(DType::kFloat32, shape);
  Tape tape;
  tape.Watch(a);
  Tensor sum = *ops::Add(a, b);
  EXPECT_TRUE(tape.IsTracked(sum));
  const void* address = sum.raw_data();
  sum = Tensor();
  Tensor later = backend::cpu::CpuAllocator::Allocate(DType::kFloat32, shape);
  ASSERT_EQ(later.raw_data(), address) << "the allocator did not reuse the block";
  EXPECT_FALSE(tape.IsTracked(later));
}

TEST(TapeTest, GradientLetsGoOfAMovedTarget) {
  Tensor a = T({1, -2}, {2}), b = T({3, 4}, {2});
  Tape tape;
  tape.Watch(a);
  Tensor target = *ops::Add(a, b);
  std::weak_ptr<Buffer> target_buffer = target.buffer();
  bool expired_during_walk = false;
  auto grads =
      tape.Gradient(std::move(target), std::vector<Tensor>{a}, T({5, 6}, {2}),
                    [&](size_t, const Tensor&) { expired_during_walk = target_buffer.expired(); });
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TRUE(expired_during_walk);
  EXPECT_THAT(Values(*(*grads)[0]), ElementsAre(5, 6));
}

TEST(TapeTest, AGradientPassedToTwoSourcesIsHandedOutTwiceOwned) {
  // a + b hands the one seed gradient to both: each source gets a tensor of its own, and the
  // caller's seed is not among them.
  Tensor a = T({1, 2}, {2}), b = T({3, 4}, {2});
  Tensor seed = T({7, 8}, {2});
  Tape tape;
  tape.Watch(a);
  tape.Watch(b);
  Tensor z = *ops::Add(a, b);
  auto grads = *tape.Gradient(z, {a, b}, seed);
  ASSERT_TRUE(grads[0] && grads[1]);
  EXPECT_NE(grads[0]->buffer(), grads[1]->buffer());
  EXPECT_NE(grads[0]->buffer(), seed.buffer());
  EXPECT_NE(grads[1]->buffer(), seed.buffer());
  EXPECT_THAT(Values(*grads[0]), ElementsAre(7, 8));
  EXPECT_THAT(Values(*grads[1]), ElementsAre(7, 8));
}

TEST(TapeTest, ASharedGradientIsCopiedBeforeAnotherIsAddedToIt) {
  // x reaches z twice: through a + x (handed the seed itself) and through x * c. Adding the
  // second gradient must not write into the seed, which the caller and `a` share.
  Tensor x = T({1, 2}, {2}), a = T({3, 4}, {2}), c = T({10, 100}, {2});
  Tensor seed = T({1, 1}, {2});
  Tape tape;
  tape.Watch(x);
  tape.Watch(a);
  Tensor z = *ops::Add(*ops::Mul(x, c), *ops::Add(a, x));
  auto grads = *tape.Gradient(z, {x, a}, seed);
  ASSERT_TRUE(grads[0] && grads[1]);
  EXPECT_THAT(Values(*grads[0]), ElementsAre(11, 101));
  EXPECT_THAT(Values(*grads[1]), ElementsAre(1, 1));
  EXPECT_THAT(Values(seed), ElementsAre(1, 1));
}

}  // namespace
}  // namespace sluice::train::autodiff
