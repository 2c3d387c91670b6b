// The NCCL communicator, under mpirun with every rank (distributed_tests), reached as the tools
// reach it: CreateDeviceCommunicator, which loads libsluice_cuda.so. Each rank needs a GPU of its
// own: with fewer devices than ranks the tests skip, saying so, except the one that checks what a
// machine without a GPU is told.
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "distributed/device_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/distributed/test_communicator.h"
#include "train/backend/backend.h"
#include "train/backend/transfer.h"

namespace sluice::distributed {
namespace {

using ::sluice::distributed::testing::TestComm;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

int Devices() {
  absl::StatusOr<int> n = train::backend::DeviceCount(DeviceType::kCuda);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.value_or(0);
}

// One GPU per rank, else skip (NCCL refuses two ranks on one device).
#define SLUICE_REQUIRE_GPU_PER_RANK()                                          \
  do {                                                                         \
    if (Devices() < TestComm().size()) {                                       \
      GTEST_SKIP() << "needs a CUDA device per rank: " << Devices() << " for " \
                   << TestComm().size() << " ranks";                           \
    }                                                                          \
  } while (0)

std::unique_ptr<Communicator> MakeNccl() {
  absl::StatusOr<std::unique_ptr<Communicator>> nccl =
      CreateDeviceCommunicator(DeviceType::kCuda, TestComm(), {.timeout = absl::Seconds(60)});
  EXPECT_TRUE(nccl.ok()) << nccl.status();
  return nccl.ok() ? *std::move(nccl) : nullptr;
}

Tensor OnDevice(const Tensor& host, const Device& device) {
  absl::StatusOr<Tensor> t = train::backend::CopyTo(host, device);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

std::vector<float> NcclFloats(const Tensor& t) {
  absl::StatusOr<Tensor> host = train::backend::ToHost(t);
  EXPECT_TRUE(host.ok()) << host.status();
  const float* p = host->data<float>();
  return std::vector<float>(p, p + host->num_elements());
}

TEST(NcclCommunicatorTest, WithoutADeviceCreateSaysSo) {
  if (Devices() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  absl::StatusOr<std::unique_ptr<Communicator>> nccl =
      CreateDeviceCommunicator(DeviceType::kCuda, TestComm());
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(nccl.status().message()), HasSubstr("sees no CUDA device"));
}

TEST(NcclCommunicatorTest, AllReduceEveryOpOnTheDevice) {
  SLUICE_REQUIRE_GPU_PER_RANK();
  std::unique_ptr<Communicator> nccl = MakeNccl();
  ASSERT_NE(nccl, nullptr);
  const int r = nccl->rank(), n = nccl->size();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax}) {
    SCOPED_TRACE(ReduceOpName(op));
    // Rank r holds {r, 10 - r, 2r + 1}; a second tensor checks that one call takes several.
    Tensor a =
        OnDevice(Tensor::FromVector<float>({1.0f * r, 10.0f - r, 2.0f * r + 1}), nccl->device());
    Tensor b = OnDevice(Tensor::FromVector<float>({5.0f}), nccl->device());
    ASSERT_TRUE(nccl->AllReduce({a, b}, op).ok());
    std::vector<float> want(3), want_b(1, 5.0f);
    for (int i = 0; i < 3; ++i) {
      float sum = 0, lo = 1e30f, hi = -1e30f;
      for (int k = 0; k < n; ++k) {
        const float v = i == 0 ? 1.0f * k : i == 1 ? 10.0f - k : 2.0f * k + 1;
        sum += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      want[i] = op == ReduceOp::kSum    ? sum
                : op == ReduceOp::kMean ? sum / n
                : op == ReduceOp::kMin  ? lo
                                        : hi;
    }
    if (op == ReduceOp::kSum) want_b[0] = 5.0f * n;
    EXPECT_THAT(NcclFloats(a), ElementsAreArray(want));
    EXPECT_THAT(NcclFloats(b), ElementsAreArray(want_b));
  }
}

TEST(NcclCommunicatorTest, BroadcastAndAllGather) {
  SLUICE_REQUIRE_GPU_PER_RANK();
  std::unique_ptr<Communicator> nccl = MakeNccl();
  ASSERT_NE(nccl, nullptr);
  const int r = nccl->rank(), n = nccl->size();
  const int root = n - 1;
  Tensor t = OnDevice(Tensor::FromVector<float>({1.0f * r, -1.0f * r}), nccl->device());
  ASSERT_TRUE(nccl->Broadcast({t}, root).ok());
  EXPECT_THAT(NcclFloats(t), ElementsAreArray({1.0f * root, -1.0f * root}));

  Tensor mine = OnDevice(Tensor::FromVector<float>({10.0f * r, 10.0f * r + 1}), nccl->device());
  absl::StatusOr<Tensor> all = nccl->AllGather(mine);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->shape(), Shape({n, 2}));
  std::vector<float> want;
  for (int k = 0; k < n; ++k) {
    want.push_back(10.0f * k);
    want.push_back(10.0f * k + 1);
  }
  EXPECT_THAT(NcclFloats(*all), ElementsAreArray(want));
}

TEST(NcclCommunicatorTest, HostTensorsAndBadArgumentsAreClearErrors) {
  SLUICE_REQUIRE_GPU_PER_RANK();
  std::unique_ptr<Communicator> nccl = MakeNccl();
  ASSERT_NE(nccl, nullptr);
  absl::Status s = nccl->AllReduce({Tensor::FromVector<float>({1.0f})}, ReduceOp::kSum);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("MPI communicator"));
  Tensor ints = OnDevice(Tensor::FromVector<int32_t>({1}), nccl->device());
  s = nccl->AllReduce({ints}, ReduceOp::kMean);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nccl->Broadcast({ints}, nccl->size()).code(), absl::StatusCode::kInvalidArgument);
  // Host values go through the bootstrap.
  std::vector<int64_t> values = {1};
  ASSERT_TRUE(nccl->AllReduceValues(absl::MakeSpan(values), ReduceOp::kSum).ok());
  EXPECT_EQ(values[0], nccl->size());
}

}  // namespace
}  // namespace sluice::distributed
