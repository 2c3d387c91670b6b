// PrefetchToDevice on the guarded test device, whose copies run on a thread of their own and
// whose kernels die when they read a copy not yet waited for: order, values, errors, checkpoints
// and teardown with copies in flight.

#include "train/data/prefetch_to_device.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataset/iterator.h"
#include "tests/dataset/test_util.h"
#include "tests/train/backend/guarded_backend.h"
#include "train/backend/transfer.h"

namespace sluice::train::data {
namespace {

using train::testing::GuardedAsyncCopies;
using train::testing::GuardedLiveAllocations;

// Element i: {float32 [3] = {i, i + 0.5, -i}, int64 [] = 10 i, bytes [] = "s<i>"}; element
// `fail_at` is an error instead.
Dataset Source(int64_t n, int64_t fail_at = -1) {
  return Dataset::Range(n).Map([fail_at](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    if (i == fail_at) return absl::InvalidArgumentError(absl::StrCat("bad element ", i));
    const float f = static_cast<float>(i);
    Tensor bytes(DType::kBytes, Shape{});
    bytes.data<std::string>()[0] = absl::StrCat("s", i);
    return Element{Tensor::FromVector<float>({f, f + 0.5f, -f}), Tensor::Scalar<int64_t>(10 * i),
                   bytes};
  });
}

class PrefetchToDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { train::testing::RegisterGuardedBackend(); }

  // Reads 7 elements, saves, restores into a fresh iterator; both go on with elements 7..19.
  void ExpectResumesExactly(const Dataset& ds);

  // Checks that `e` is element i of Source, its numeric tensors on `device`.
  void ExpectElement(const Element& e, int64_t i, const Device& device) {
    ASSERT_EQ(e.size(), 3u);
    EXPECT_TRUE(e[0].device() == device) << e[0].device().DebugString();
    EXPECT_TRUE(e[1].device() == device);
    EXPECT_TRUE(e[2].device().is_cpu());  // bytes stay on the host
    absl::StatusOr<Tensor> f = backend::ToHost(e[0]);
    absl::StatusOr<Tensor> label = backend::ToHost(e[1]);
    ASSERT_TRUE(f.ok() && label.ok());
    const float x = static_cast<float>(i);
    EXPECT_EQ(f->data<float>()[0], x);
    EXPECT_EQ(f->data<float>()[1], x + 0.5f);
    EXPECT_EQ(f->data<float>()[2], -x);
    EXPECT_EQ(label->scalar<int64_t>(), 10 * i);
    EXPECT_EQ(e[2].data<std::string>()[0], absl::StrCat("s", i));
  }
};

TEST_F(PrefetchToDeviceTest, GuardedPrefetchToDeviceKeepsOrderAndValues) {
  const int64_t copies_before = GuardedAsyncCopies();
  Dataset ds = PrefetchToDevice(Source(40), Device::Guarded(), 3);
  EXPECT_EQ(ds.Cardinality(), 40);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  for (int64_t i = 0; i < 40; ++i) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->has_value());
    ExpectElement(**e, i, Device::Guarded());
  }
  absl::StatusOr<std::optional<Element>> end = it->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  // Two numeric tensors per element, each copied on the copy thread.
  EXPECT_EQ(GuardedAsyncCopies() - copies_before, 80);
}

TEST_F(PrefetchToDeviceTest, GuardedPrefetchToDeviceSaveRestoreResumesExactly) {
  // Buffered elements saved as their sources (recomputed and copied to the device again on
  // restore), and saved whole as host copies.
  for (std::optional<bool> sources : {std::optional<bool>(), std::optional<bool>(false)}) {
    SCOPED_TRACE(sources ? "elements saved whole" : "elements saved as sources");
    ExpectResumesExactly(PrefetchToDevice(
        Source(20).Prefetch(2).WithOptions({.checkpoint_sources = sources}), Device::Guarded(), 4));
  }
}

void PrefetchToDeviceTest::ExpectResumesExactly(const Dataset& ds) {
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  for (int64_t i = 0; i < 7; ++i) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
  }
  // Up to four elements are buffered on the device now.
  absl::StatusOr<std::string> saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::unique_ptr<Iterator> resumed = ds.MakeIterator();
  ASSERT_TRUE(resumed->Restore(*saved).ok());
  for (int64_t i = 7; i < 20; ++i) {
    absl::StatusOr<std::optional<Element>> a = it->GetNext();
    absl::StatusOr<std::optional<Element>> b = resumed->GetNext();
    ASSERT_TRUE(a.ok() && a->has_value() && b.ok() && b->has_value()) << i;
    ExpectElement(**a, i, Device::Guarded());
    ExpectElement(**b, i, Device::Guarded());
  }
  absl::StatusOr<std::optional<Element>> end = resumed->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

// A restore recomputes the saved elements through the input and copies them to the device; a
// cancellation meanwhile returns at once instead of waiting for it (PrefetchToDevice restores
// without the lock its cancellation callback takes).
TEST_F(PrefetchToDeviceTest, CancellingDuringARestoreDoesNotWaitForIt) {
  sluice::testing::BlockingMapGate gate;
  const Dataset ds = PrefetchToDevice(Dataset::Range(100).Map(gate.Fn()), Device::Guarded(), 4);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  for (int i = 0; i < 1000 && it->Stats().back().buffered_elements < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(it->Stats().back().buffered_elements, 2);
  absl::StatusOr<std::string> saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(sluice::testing::CancellationReturnsDuringRestore(ds, *saved, gate));
}

TEST_F(PrefetchToDeviceTest, GuardedPrefetchToDeviceKeepsErrorsInPlace) {
  std::unique_ptr<Iterator> it =
      PrefetchToDevice(Source(10, /*fail_at=*/5), Device::Guarded()).MakeIterator();
  for (int64_t i = 0; i < 5; ++i) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value()) << i;
    ExpectElement(**e, i, Device::Guarded());
  }
  absl::StatusOr<std::optional<Element>> e = it->GetNext();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("bad element 5"), std::string::npos) << e.status();
}

TEST_F(PrefetchToDeviceTest, GuardedPrefetchToDeviceReleasesEverythingWhenDestroyedEarly) {
  const int64_t live_before = GuardedLiveAllocations();
  {
    std::unique_ptr<Iterator> it =
        PrefetchToDevice(Source(1000), Device::Guarded(), 8).MakeIterator();
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    // Destroyed with up to eight elements buffered and copies in flight.
  }
  EXPECT_EQ(GuardedLiveAllocations(), live_before);
}

// The elements in the buffer are held, not consumed, until handed on (NodeStats::inputs_held,
// which AUTOTUNE's input ratio subtracts); elements a restore recomputed are not, and a destroyed
// iterator takes what it still held out of the count.
TEST_F(PrefetchToDeviceTest, CountsTheInputsItsBufferHolds) {
  const Dataset ds = PrefetchToDevice(Source(100), Device::Guarded(), 4);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto node = [](const Iterator& i) {
    for (const NodeStatsSnapshot& n : i.Stats()) {
      if (n.name.starts_with("PrefetchToDevice")) return n;
    }
    ADD_FAILURE() << "no PrefetchToDevice node";
    return NodeStatsSnapshot{};
  };
  // The producer fills the buffer on its own thread: wait for the four elements.
  for (int i = 0; i < 2000 && node(*it).buffered_elements < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(node(*it).buffered_elements, 4);
  EXPECT_EQ(node(*it).inputs_held, 4);
  absl::StatusOr<std::string> saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::shared_ptr<StatsRegistry> registry = it->stats_registry();
  it.reset();
  for (const NodeStatsSnapshot& n : registry->Snapshot()) EXPECT_EQ(n.inputs_held, 0) << n.name;

  std::unique_ptr<Iterator> restored = ds.MakeIterator();
  ASSERT_TRUE(restored->Restore(*saved).ok());
  EXPECT_EQ(node(*restored).buffered_elements, 4);  // recomputed, not taken from the input
  EXPECT_EQ(node(*restored).inputs_held, 0);
}

TEST_F(PrefetchToDeviceTest, OnTheHostItIsAPlainPrefetch) {
  std::unique_ptr<Iterator> it = PrefetchToDevice(Source(5), Device::Cpu()).MakeIterator();
  for (int64_t i = 0; i < 5; ++i) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    ExpectElement(**e, i, Device::Cpu());
  }
}

TEST_F(PrefetchToDeviceTest, RefusesABadBufferSizeAndAMissingDevice) {
  absl::StatusOr<std::optional<Element>> e =
      PrefetchToDevice(Source(5), Device::Guarded(), 0).MakeIterator()->GetNext();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("buffer_size must be >= 1"), std::string::npos) << e.status();
  // No CUDA backend is registered in this test binary (or no GPU exists): a clear error, not a
  // hang or a crash.
  e = PrefetchToDevice(Source(5), Device::Cuda(0)).MakeIterator()->GetNext();
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("PrefetchToDevice"), std::string::npos) << e.status();
}

// tf.data's rule: PrefetchToDevice is the last step. After it, a node that reads elements on the
// host (here a Batch, which would copy device memory on the host: a crash on a GPU, and on the
// guarded device) is refused when the iterator starts; nodes that pass elements on work.
TEST_F(PrefetchToDeviceTest, GuardedPrefetchToDeviceIsTheLastStep) {
  const Dataset on_device = PrefetchToDevice(Source(10), Device::Guarded());
  absl::StatusOr<std::optional<Element>> e = on_device.Take(4).Batch(2).MakeIterator()->GetNext();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("Batch[4] reads its input's elements on the host, but "
                                      "PrefetchToDevice[2] put them on guarded:0"),
            std::string::npos)
      << e.status();
  std::unique_ptr<Iterator> it = on_device.Skip(2).Take(3).Repeat(2).MakeIterator();
  for (int64_t i : {2, 3, 4, 2, 3, 4}) {
    e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
    ExpectElement(**e, i, Device::Guarded());
  }
}

}  // namespace
}  // namespace sluice::train::data
