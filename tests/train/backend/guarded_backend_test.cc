// The guarded test device itself: its memory is unreadable from the host, its kernels give the
// CPU backend's results, and it refuses operands from another device as the CUDA backend does.

#include "tests/train/backend/guarded_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>

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

}  // namespace
}  // namespace sluice::train::testing
