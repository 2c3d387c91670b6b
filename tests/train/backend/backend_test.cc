#include "train/backend/backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/buffer.h"
#include "tests/train/gradient_check.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/plugin.h"
#include "train/ops/activations.h"
#include "train/ops/conv2d.h"
#include "train/ops/matmul.h"

namespace sluice::train::backend {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// A tensor that claims to live on cuda:0 (host memory underneath: no kernel
// may touch it, and none does, since dispatch fails first).
Tensor FakeCudaTensor(Shape shape) {
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * sizeof(float);
  void* p = ::operator new(bytes);
  auto buffer = Buffer::Wrap(p, bytes, Device::Cuda(0), [](void* q) { ::operator delete(q); });
  return *Tensor::FromBuffer(DType::kFloat32, std::move(shape), buffer);
}

TEST(BackendTest, CpuTensorsGetTheCpuBackend) {
  Tensor a = RandomTensor({2, 2}, 1);
  absl::StatusOr<Backend*> b = BackendFor("Op", {&a});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, &cpu::CpuBackend::Get());
  EXPECT_TRUE((*b)->device().is_cpu());
}

// One test, in order: the registry is process-wide and has no unregister.
TEST(BackendTest, CudaTensorsFailClearlyWithoutACudaBackend) {
  // A CUDA build loads libsluice_cuda.so here, whose backend would run kernels on these fake
  // tensors' host memory where a GPU exists.
  if (PluginBuilt(DeviceType::kCuda) && DeviceCount(DeviceType::kCuda).value_or(0) > 0) {
    GTEST_SKIP() << "this machine has a CUDA device";
  }
  Tensor cpu = RandomTensor({2, 2}, 1);
  Tensor gpu = FakeCudaTensor({2, 2});
  absl::StatusOr<Tensor> y = ops::Relu(gpu);
  ASSERT_FALSE(y.ok());
  if (PluginBuilt(DeviceType::kCuda)) {
    // The plugin's own answer on a machine without a GPU, or why it did not load.
    EXPECT_THAT(y.status().message(),
                AnyOf(HasSubstr("Relu: no CUDA device"),
                      HasSubstr("Relu: a tensor is on cuda:0 but sluice's CUDA backend")));
  } else {
    EXPECT_EQ(y.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(y.status().message(),
                HasSubstr("Relu: a tensor is on cuda:0 but sluice was built without CUDA"));
  }

  absl::StatusOr<Tensor> mixed = ops::MatMul(cpu, gpu);
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(), HasSubstr("MatMul: inputs on different devices"));

  // What the CUDA plugin registers reports its own failure, e.g. a machine without a GPU.
  RegisterBackend(DeviceType::kCuda, [](int) -> absl::StatusOr<Backend*> {
    return absl::FailedPreconditionError("no CUDA device");
  });
  absl::StatusOr<Tensor> conv =
      ops::Conv2D(FakeCudaTensor({1, 3, 3, 1}), FakeCudaTensor({1, 1, 1, 1}));
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().message(), "Conv2D: no CUDA device");
}

}  // namespace
}  // namespace sluice::train::backend
