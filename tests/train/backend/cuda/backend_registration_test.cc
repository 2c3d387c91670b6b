// Runs in every build: what asking for a CUDA tensor's backend says when
// there is no GPU (or no CUDA in the build), and that it works when there is.
// In a CUDA build the first request loads libsluice_cuda.so, which this suite
// also links: the plugin finds itself loaded and registers.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "train/backend/backend.h"
#include "train/backend/plugin.h"
#ifdef SLUICE_HAVE_CUDA
#include "train/backend/cuda/cuda_backend.h"
#endif

namespace sluice::train {
namespace {

using ::testing::HasSubstr;

TEST(BackendRegistrationTest, CudaBackendOrAClearError) {
  absl::StatusOr<backend::Backend*> backend = backend::BackendFor(Device::Cuda(0));
#ifdef SLUICE_HAVE_CUDA
  if (backend::cuda::CudaDeviceCount() == 0) {
    ASSERT_FALSE(backend.ok());
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(backend.status().message(), HasSubstr("no CUDA device"));
    EXPECT_THAT(backend.status().message(), HasSubstr("cuda:0"));
  } else {
    ASSERT_TRUE(backend.ok()) << backend.status();
    EXPECT_EQ((*backend)->device(), Device::Cuda(0));
    // One shared backend per device.
    absl::StatusOr<backend::Backend*> again = backend::BackendFor(Device::Cuda(0));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *backend);
  }
#else
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(backend.status().message(), HasSubstr("built without CUDA"));
#endif
}

#ifdef SLUICE_HAVE_CUDA
TEST(BackendRegistrationTest, DeviceIndexPastTheLastIsRefused) {
  const int count = backend::cuda::CudaDeviceCount();
  absl::StatusOr<backend::Backend*> backend = backend::BackendFor(Device::Cuda(count + 3));
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.status().message(), HasSubstr("no CUDA device"));
}

TEST(BackendRegistrationTest, DeviceCountIsThePlugins) {
  EXPECT_TRUE(backend::PluginBuilt(DeviceType::kCuda));
  absl::StatusOr<int> count = backend::DeviceCount(DeviceType::kCuda);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, backend::cuda::CudaDeviceCount());
}
#else
TEST(BackendRegistrationTest, WithoutCudaDeviceCountSaysSo) {
  EXPECT_FALSE(backend::PluginBuilt(DeviceType::kCuda));
  absl::StatusOr<int> count = backend::DeviceCount(DeviceType::kCuda);
  EXPECT_THAT(count.status().message(), HasSubstr("sluice was built without CUDA"));
}
#endif

}  // namespace
}  // namespace sluice::train
