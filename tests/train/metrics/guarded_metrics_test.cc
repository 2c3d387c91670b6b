// The prediction metrics on the guarded test device (tests/train/backend/guarded_backend.h): they
// run there, read nothing back until Result(), and give the CPU's numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "train/backend/transfer.h"
#include "train/metrics/binary_accuracy.h"
#include "train/metrics/categorical_accuracy.h"
#include "train/metrics/mean.h"
#include "train/metrics/mean_absolute_error.h"
#include "train/metrics/mean_squared_error.h"
#include "train/metrics/sparse_categorical_accuracy.h"
#include "train/metrics/top_k_categorical_accuracy.h"

namespace sluice::train::metrics {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;

TEST(GuardedMetricsTest, GuardedMetricsMatchCpu) {
  testing::RegisterGuardedBackend();
  const Tensor one_hot = T({1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1}, {4, 3});
  const Tensor binary = *Tensor::FromVector<int32_t>({1, 0, 0, 1}, Shape{4});
  const Tensor y_pred = RandomTensor({4, 3}, 1, 0.0f, 1.0f);
  const Tensor head = RandomTensor({4, 1}, 2, 0.0f, 1.0f);
  const Tensor targets = RandomTensor({4, 3}, 3);

  using Make = std::function<std::unique_ptr<PredictionMetric>()>;
  struct Case {
    Make make;
    Tensor y_true, y_pred;
  };
  const std::vector<Case> cases = {
      {[] { return std::make_unique<CategoricalAccuracy>(); }, one_hot, y_pred},
      {[] { return std::make_unique<TopKCategoricalAccuracy>(2); }, one_hot, y_pred},
      {[] { return std::make_unique<BinaryAccuracy>(); }, binary, head},
      {[] { return std::make_unique<MeanSquaredError>(); }, targets, y_pred},
      {[] { return std::make_unique<MeanAbsoluteError>(); }, targets, y_pred},
  };
  for (const Case& c : cases) {
    std::unique_ptr<PredictionMetric> cpu = c.make(), guarded = c.make();
    SCOPED_TRACE(cpu->name());
    ASSERT_TRUE(cpu->Update(c.y_true, c.y_pred).ok());
    const Tensor t = *backend::CopyTo(c.y_true, Device::Guarded());
    const Tensor p = *backend::CopyTo(c.y_pred, Device::Guarded());
    const int64_t reads = testing::GuardedHostReads();
    for (int i = 0; i < 2; ++i) {
      absl::Status s = guarded->Update(t, p);
      ASSERT_TRUE(s.ok()) << s;
    }
    EXPECT_EQ(testing::GuardedHostReads(), reads);  // nothing came back during the updates
    EXPECT_EQ(*guarded->Result(), *cpu->Result());
    EXPECT_EQ(guarded->count(), 2 * cpu->count());
  }
}

TEST(GuardedMetricsTest, GuardedMeanOfDeviceScalars) {
  testing::RegisterGuardedBackend();
  Mean loss("loss");
  const int64_t reads = testing::GuardedHostReads();
  ASSERT_TRUE(loss.Update(*backend::CopyTo(Tensor::Scalar(2.0f), Device::Guarded()), 3.0).ok());
  ASSERT_TRUE(loss.Update(*backend::CopyTo(Tensor::Scalar(4.0f), Device::Guarded()), 1.0).ok());
  EXPECT_EQ(testing::GuardedHostReads(), reads);
  EXPECT_DOUBLE_EQ(*loss.Result(), 2.5);  // (2 * 3 + 4) / 4
}

// Fit's metrics add a batch in one kernel each beyond what they compute: the loss tracker its
// weighted batch loss (one kernel, not a Fill and two Axpby), the accuracy its hits (InTopK and
// one kernel, not a Reduce and an Axpby). Counted on the guarded device, which counts every
// kernel call; the values are the CPU's.
TEST(GuardedMetricsTest, AMetricAddsABatchInOneKernel) {
  testing::RegisterGuardedBackend();
  Mean loss("loss"), cpu_loss("loss");
  SparseCategoricalAccuracy accuracy, cpu_accuracy;
  ASSERT_TRUE(loss.PrepareOn(Device::Guarded()).ok());
  ASSERT_TRUE(accuracy.PrepareOn(Device::Guarded()).ok());
  Tensor labels(DType::kInt64, Shape{64});
  for (int i = 0; i < 64; ++i) labels.flat<int64_t>()[i] = i % 10;
  const Tensor y_pred = RandomTensor({64, 10}, 9);
  const Tensor t = *backend::CopyTo(labels, Device::Guarded());
  const Tensor p = *backend::CopyTo(y_pred, Device::Guarded());
  for (int step = 0; step < 3; ++step) {
    const Tensor batch_loss = Tensor::Scalar(0.25f + 0.1f * static_cast<float>(step));
    const Tensor on_device = *backend::CopyTo(batch_loss, Device::Guarded());
    int64_t before = testing::GuardedKernelCalls();
    ASSERT_TRUE(loss.Update(on_device, 64.0).ok());
    EXPECT_EQ(testing::GuardedKernelCalls() - before, 1);
    before = testing::GuardedKernelCalls();
    ASSERT_TRUE(accuracy.Update(t, p).ok());
    EXPECT_EQ(testing::GuardedKernelCalls() - before, 2);
    ASSERT_TRUE(cpu_loss.Update(batch_loss, 64.0).ok());
    ASSERT_TRUE(cpu_accuracy.Update(labels, y_pred).ok());
  }
  EXPECT_EQ(*loss.total(), *cpu_loss.total());
  EXPECT_EQ(*accuracy.Result(), *cpu_accuracy.Result());
}

}  // namespace
}  // namespace sluice::train::metrics
