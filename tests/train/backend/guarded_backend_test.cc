// The guarded test device itself: its memory is unreadable from the host, its kernels give the
// CPU backend's results, and it refuses operands from another device as the CUDA backend does.

#include "tests/train/backend/guarded_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "tests/train/gradient_check.h"
#include "train/backend/backend.h"
#include "train/backend/transfer.h"

namespace sluice::train::testing {
namespace {

using ::testing::ElementsAre;

class GuardedBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The pipeline's and oneTBB's threads are running: re-exec rather than fork.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    RegisterGuardedBackend();
    absl::StatusOr<backend::Backend*> b = backend::BackendFor(Device::Guarded());
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = *b;
  }
  Tensor OnDevice(const Tensor& host) {
    absl::StatusOr<Tensor> t = backend::CopyTo(host, Device::Guarded());
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  std::vector<float> Host(const Tensor& t) {
    absl::StatusOr<Tensor> host = backend::ToHost(t);
    EXPECT_TRUE(host.ok()) << host.status();
    return Values(*host);
  }
  backend::Backend* backend_ = nullptr;
};

TEST_F(GuardedBackendTest, GuardedHostReadsAndWritesDie) {
  Tensor t = OnDevice(Tensor::FromVector<float>({1, 2, 3}));
  EXPECT_TRUE(t.device() == Device::Guarded());
  EXPECT_DEATH({ std::printf("%f\n", static_cast<double>(t.data<float>()[0])); }, "");
  EXPECT_DEATH({ t.data<float>()[1] = 5; }, "");
  // Through the backend, the values are there.
  EXPECT_THAT(Host(t), ElementsAre(1, 2, 3));
}

TEST_F(GuardedBackendTest, GuardedKernelsGiveTheCpuResults) {
  const Tensor a = RandomTensor({5, 7}, 1), b = RandomTensor({7, 3}, 2);
  Tensor cpu_out(DType::kFloat32, Shape{5, 3});
  absl::StatusOr<backend::Backend*> cpu = backend::BackendFor(Device::Cpu());
  ASSERT_TRUE(cpu.ok());
  ASSERT_TRUE((*cpu)->MatMul(a, false, b, false, cpu_out).ok());
  absl::StatusOr<Tensor> out = backend_->Allocate(DType::kFloat32, Shape{5, 3});
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(backend_->MatMul(OnDevice(a), false, OnDevice(b), false, *out).ok());
  EXPECT_EQ(Host(*out), Values(cpu_out));

  Tensor y = OnDevice(Tensor::FromVector<float>({1, 2}));
  ASSERT_TRUE(backend_->Axpby(3, OnDevice(Tensor::FromVector<float>({1, 1})), 1, y).ok());
  EXPECT_THAT(Host(y), ElementsAre(4, 5));
}

TEST_F(GuardedBackendTest, GuardedKernelsRefuseHostOperands) {
  const Tensor host = Tensor::FromVector<float>({1, 2});
  Tensor device = OnDevice(host);
  absl::Status s = backend_->Axpby(1, host, 1, device);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("a tensor is on cpu, not guarded:0"));
}

TEST_F(GuardedBackendTest, GuardedAllocationsAreReleased) {
  const int64_t before = GuardedLiveAllocations();
  {
    Tensor t = OnDevice(Tensor::FromVector<float>({1}));
    EXPECT_EQ(GuardedLiveAllocations(), before + 1);
  }
  EXPECT_EQ(GuardedLiveAllocations(), before);
}

// A host tensor in the backend's staging memory holding `values`.
Tensor Staged(backend::Backend& b, const std::vector<float>& values) {
  absl::StatusOr<Tensor> t =
      b.AllocateStaging(DType::kFloat32, Shape{static_cast<int64_t>(values.size())});
  EXPECT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->device().is_cpu());
  std::copy(values.begin(), values.end(), t->data<float>());
  return *t;
}

TEST_F(GuardedBackendTest, GuardedCopyAsyncRunsOnTheCopyThread) {
  const int64_t before = GuardedAsyncCopies();
  Tensor src = Staged(*backend_, {1, 2, 3, 4});
  absl::StatusOr<Tensor> dst = backend_->Allocate(DType::kFloat32, Shape{4});
  ASSERT_TRUE(dst.ok());
  absl::StatusOr<std::shared_ptr<backend::Event>> copied = backend_->CopyAsync(src, *dst);
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_TRUE(backend_->WaitEvent(**copied).ok());
  EXPECT_THAT(Host(*dst), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(GuardedAsyncCopies() - before, 1);
}

TEST_F(GuardedBackendTest, GuardedKernelBeforeWaitEventDies) {
  // A kernel that reads a copy's destination without ordering itself after the copy would read
  // a GPU copy still in flight: the guarded device dies there, whatever the timing.
  EXPECT_DEATH(
      {
        Tensor src = Staged(*backend_, {1, 2});
        Tensor dst = *backend_->Allocate(DType::kFloat32, Shape{2});
        absl::StatusOr<std::shared_ptr<backend::Event>> copied = backend_->CopyAsync(src, dst);
        Tensor out = *backend_->Allocate(DType::kFloat32, Shape{2});
        backend_->Axpby(1, dst, 0, out).IgnoreError();
      },
      "before waiting for its event");
}

TEST_F(GuardedBackendTest, GuardedCopyAsyncRefusesWrongOperands) {
  Tensor on_device = OnDevice(Tensor::FromVector<float>({1, 2}));
  Tensor dst = *backend_->Allocate(DType::kFloat32, Shape{2});
  // From the device: CopyAsync only takes host sources.
  absl::StatusOr<std::shared_ptr<backend::Event>> r = backend_->CopyAsync(on_device, dst);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // Into a host tensor.
  Tensor host(DType::kFloat32, Shape{2});
  r = backend_->CopyAsync(Tensor::FromVector<float>({1, 2}), host);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // Sizes that differ.
  r = backend_->CopyAsync(Tensor::FromVector<float>({1, 2, 3}), dst);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::testing
