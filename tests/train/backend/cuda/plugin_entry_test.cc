// libsluice_cuda.so's entry points (train/backend/cuda/plugin_entry.cc): its ABI string, and
// NCCL's communicator as distributed::CreateDeviceCommunicator makes it, on one rank (a host
// bootstrap of one process, no MPI): what the device check runs on a one-GPU machine.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "distributed/device_communicator.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/plugin.h"
#include "train/backend/plugin_config.h"
#include "train/backend/transfer.h"

extern "C" const char* sluice_plugin_abi();

namespace sluice::train::backend::cuda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PluginEntryTest, TheAbiIsThisBuilds) { EXPECT_STREQ(sluice_plugin_abi(), SLUICE_PLUGIN_ABI); }

// A process group of one: every collective is the identity.
class OneRank final : public distributed::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string Describe() const override { return "the only rank"; }
  absl::StatusOr<distributed::PendingCollective> StartAllReduce(std::vector<Tensor>,
                                                                distributed::ReduceOp) override {
    return distributed::PendingCollective();
  }
  absl::Status Broadcast(std::vector<Tensor>, int) override { return absl::OkStatus(); }
  absl::StatusOr<Tensor> AllGather(const Tensor& t) override { return t; }
  absl::StatusOr<std::vector<std::string>> AllGatherBytes(const std::string& bytes) override {
    return std::vector<std::string>{bytes};
  }
  absl::Status Barrier() override { return absl::OkStatus(); }
  double busy_seconds() const override { return 0; }
  [[noreturn]] void Abort(int exit_code) override { std::exit(exit_code); }

 protected:
  absl::Status AllReduceHost(void*, int64_t, distributed::ValueType,
                             distributed::ReduceOp) override {
    return absl::OkStatus();
  }
};

std::vector<float> Floats(const Tensor& t) {
  absl::StatusOr<Tensor> host = ToHost(t);
  EXPECT_TRUE(host.ok()) << host.status();
  if (!host.ok()) return {};
  const float* p = host->data<float>();
  return std::vector<float>(p, p + host->num_elements());
}

TEST(PluginEntryTest, NcclOnOneRank) {
#ifndef SLUICE_HAVE_NCCL
  GTEST_SKIP() << "this build's plugin has no NCCL";
#endif
  OneRank bootstrap;
  absl::StatusOr<std::unique_ptr<distributed::Communicator>> nccl =
      distributed::CreateDeviceCommunicator(DeviceType::kCuda, bootstrap,
                                            {.timeout = absl::Seconds(60)});
  if (CudaDeviceCount() == 0) {
    ASSERT_FALSE(nccl.ok());
    EXPECT_THAT(nccl.status().message(), HasSubstr("sees no CUDA device"));
    GTEST_SKIP() << "no CUDA device: NCCL's one-rank collectives need a GPU";
  }
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  const Device device = (*nccl)->device();
  EXPECT_EQ(device, Device::Cuda(0));
  absl::StatusOr<Tensor> t = CopyTo(Tensor::FromVector<float>({1.5f, -2.0f, 3.0f}), device);
  ASSERT_TRUE(t.ok()) << t.status();
  for (distributed::ReduceOp op :
       {distributed::ReduceOp::kSum, distributed::ReduceOp::kMean, distributed::ReduceOp::kMax}) {
    ASSERT_TRUE((*nccl)->AllReduce({*t}, op).ok());
    EXPECT_THAT(Floats(*t), ElementsAre(1.5f, -2.0f, 3.0f)) << distributed::ReduceOpName(op);
  }
  ASSERT_TRUE((*nccl)->Broadcast({*t}, 0).ok());
  absl::StatusOr<Tensor> all = (*nccl)->AllGather(*t);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->shape(), Shape({1, 3}));
  EXPECT_THAT(Floats(*all), ElementsAre(1.5f, -2.0f, 3.0f));
  // Host tensors go through the bootstrap, not NCCL.
  EXPECT_EQ(
      (*nccl)->AllReduce({Tensor::FromVector<float>({1.0f})}, distributed::ReduceOp::kSum).code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::backend::cuda
