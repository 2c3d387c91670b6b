// Every loss on the guarded test device (tests/train/backend/guarded_backend.h): nothing reads
// device memory from the host, and values and gradients are the CPU's, bit for bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/backend/transfer.h"
#include "train/losses/binary_crossentropy.h"
#include "train/losses/categorical_crossentropy.h"
#include "train/losses/huber.h"
#include "train/losses/loss_function.h"
#include "train/losses/mean_absolute_error.h"
#include "train/losses/mean_squared_error.h"
#include "train/losses/sparse_categorical_crossentropy.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::losses {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;

struct Result {
  std::vector<float> loss, per_example, gradient;
};

// The loss, its per-example values and d(loss)/d(y_pred), computed on `device`, read back.
Result RunLoss(const Loss& loss, const Tensor& y_true, const Tensor& y_pred, const Device& device) {
  Tensor t = *backend::CopyTo(y_true, device);
  Tensor p = *backend::CopyTo(y_pred, device);
  autodiff::Tape tape;
  tape.Watch(p);
  absl::StatusOr<Tensor> value = loss(t, p);
  EXPECT_TRUE(value.ok()) << loss.name() << ": " << value.status();
  if (!value.ok()) return {};
  EXPECT_TRUE(value->device() == device);
  auto grads = tape.Gradient(*value, {p});
  EXPECT_TRUE(grads.ok()) << grads.status();
  absl::StatusOr<Tensor> per_example = loss.PerExample(t, p);
  EXPECT_TRUE(per_example.ok()) << per_example.status();
  return {Values(*backend::ToHost(*value)), Values(*backend::ToHost(*per_example)),
          Values(*backend::ToHost(*(*grads)[0]))};
}

TEST(GuardedLossesTest, GuardedLossesMatchCpu) {
  testing::RegisterGuardedBackend();
  const Tensor logits = RandomTensor({4, 3}, 1, -2.0f, 2.0f);
  const Tensor probs = RandomTensor({4, 3}, 2, 0.0f, 1.0f);
  const Tensor sparse = *Tensor::FromVector<int32_t>({0, 2, 1, 2}, Shape{4, 1});
  const Tensor one_hot = T({1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1}, {4, 3});
  const Tensor binary =
      *Tensor::FromVector<int64_t>({1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0}, Shape{4, 3});
  const Tensor targets = RandomTensor({4, 3}, 3, -1.0f, 1.0f);
  const Tensor column = RandomTensor({4}, 4, -1.0f, 1.0f);
  const Tensor head = RandomTensor({4, 1}, 5, -2.0f, 2.0f);

  struct Case {
    std::unique_ptr<Loss> loss;
    Tensor y_true, y_pred;
  };
  std::vector<Case> cases;
  cases.push_back({std::make_unique<SparseCategoricalCrossentropy>(
                       SparseCategoricalCrossentropyOptions{.from_logits = true}),
                   sparse, logits});
  cases.push_back({std::make_unique<SparseCategoricalCrossentropy>(), sparse, probs});
  cases.push_back({std::make_unique<CategoricalCrossentropy>(CategoricalCrossentropyOptions{
                       .from_logits = true, .label_smoothing = 0.1f}),
                   one_hot, logits});
  cases.push_back({std::make_unique<CategoricalCrossentropy>(), one_hot, probs});
  cases.push_back({std::make_unique<BinaryCrossentropy>(
                       BinaryCrossentropyOptions{.from_logits = true, .label_smoothing = 0.2f}),
                   binary, logits});
  cases.push_back({std::make_unique<BinaryCrossentropy>(), binary, probs});
  cases.push_back({std::make_unique<MeanSquaredError>(), targets, logits});
  cases.push_back({std::make_unique<MeanSquaredError>(), column, head});  // [N] labels, [N, 1]
  cases.push_back(
      {std::make_unique<MeanAbsoluteError>(MeanAbsoluteErrorOptions{.reduction = Reduction::kSum}),
       targets, logits});
  cases.push_back({std::make_unique<Huber>(HuberOptions{.delta = 0.5f}), targets, logits});
  cases.push_back({std::make_unique<LossFunction>(
                       "squared",
                       [](const Tensor& y_true, const Tensor& y_pred) -> absl::StatusOr<Tensor> {
                         SLUICE_ASSIGN_OR_RETURN(Tensor e, ops::Sub(y_pred, y_true));
                         return ops::Mul(e, e);
                       },
                       Reduction::kNone),
                   targets, logits});

  const int64_t kernels_before = testing::GuardedKernelCalls();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.loss->name());
    Result cpu = RunLoss(*c.loss, c.y_true, c.y_pred, Device::Cpu());
    Result guarded = RunLoss(*c.loss, c.y_true, c.y_pred, Device::Guarded());
    ASSERT_FALSE(cpu.loss.empty());
    EXPECT_EQ(guarded.loss, cpu.loss);
    EXPECT_EQ(guarded.per_example, cpu.per_example);
    EXPECT_EQ(guarded.gradient, cpu.gradient);
  }
  EXPECT_GT(testing::GuardedKernelCalls() - kernels_before, 100);  // the work ran there
}

TEST(GuardedLossesTest, GuardedSparseLabelCheckCanBeDeferred) {
  testing::RegisterGuardedBackend();
  SparseCategoricalCrossentropy loss({.from_logits = true});
  Tensor labels = *backend::CopyTo(Tensor::FromVector<int64_t>({0, 5}), Device::Guarded());
  Tensor logits = *backend::CopyTo(RandomTensor({2, 3}, 1), Device::Guarded());
  ops::LabelRangeCheck check;
  ASSERT_TRUE(loss(labels, logits, &check).ok());
  EXPECT_EQ(check.Check().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(loss(labels, logits).status().code(), absl::StatusCode::kInvalidArgument);
}

// The sparse loss reduces in its own kernel both ways: forward, the labels' cast and check and
// the loss with its reduction, one kernel fewer than PerExample then Reduce (the Reduce);
// backward, one fewer (the BroadcastTo of the reduction's gradient). For logits and
// probabilities, labels [N] and [N, 1], the mean and the sum. Counted on the guarded device,
// which counts every kernel call.
TEST(GuardedLossesTest, TheSparseLossReducesInItsKernelBothWays) {
  testing::RegisterGuardedBackend();
  Tensor flat_labels(DType::kInt32, Shape{64});
  for (int i = 0; i < 64; ++i) flat_labels.flat<int32_t>()[i] = i % 10;
  const Tensor column_labels = *flat_labels.Reshape(Shape{64, 1});
  const Tensor logits = *backend::CopyTo(RandomTensor({64, 10}, 4, -3.0f, 3.0f), Device::Guarded());
  const Tensor probs = *backend::CopyTo(RandomTensor({64, 10}, 5, 0.05f, 0.95f), Device::Guarded());
  // Kernels of the forward and of the backward.
  auto count = [](const std::function<absl::StatusOr<Tensor>()>& forward, const Tensor& p) {
    autodiff::Tape tape;
    tape.Watch(p);
    int64_t before = testing::GuardedKernelCalls();
    absl::StatusOr<Tensor> value = forward();
    EXPECT_TRUE(value.ok()) << value.status();
    const int64_t forward_calls = testing::GuardedKernelCalls() - before;
    before = testing::GuardedKernelCalls();
    EXPECT_TRUE(tape.Gradient(*value, {p}).ok());
    return std::pair<int64_t, int64_t>(forward_calls, testing::GuardedKernelCalls() - before);
  };
  for (const bool from_logits : {true, false}) {
    for (const Tensor& host_labels : {flat_labels, column_labels}) {
      for (const Reduction reduction : {Reduction::kSumOverBatchSize, Reduction::kSum}) {
        SCOPED_TRACE(::testing::Message() << from_logits << " " << host_labels.rank() << " "
                                          << static_cast<int>(reduction));
        SparseCategoricalCrossentropy loss({.from_logits = from_logits, .reduction = reduction});
        const Tensor t = *backend::CopyTo(host_labels, Device::Guarded());
        const Tensor& p = from_logits ? logits : probs;
        const auto fused = count([&] { return loss(t, p); }, p);
        const auto unfused = count(
            [&]() -> absl::StatusOr<Tensor> {
              SLUICE_ASSIGN_OR_RETURN(Tensor each, loss.PerExample(t, p));
              return loss.Reduce(each);
            },
            p);
        EXPECT_EQ(fused.first, unfused.first - 1);
        EXPECT_EQ(fused.second, unfused.second - 1);
        if (from_logits) {
          // CastLabels, the copy back of the bad labels' count (not deferred here), the loss.
          EXPECT_EQ(fused.first, 3);
          EXPECT_EQ(fused.second, 2);  // the seed's Fill, the backward
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice::train::losses
