#include "train/backend/cuda/device_allocator.h"

#include <gtest/gtest.h>

#include <vector>

#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/stream.h"

namespace sluice::train::backend::cuda {
namespace {

TEST(DeviceAllocatorTest, BucketSizesBoundTheSlack) {
  EXPECT_EQ(DeviceAllocator::BucketSize(0), 512u);
  EXPECT_EQ(DeviceAllocator::BucketSize(1), 512u);
  EXPECT_EQ(DeviceAllocator::BucketSize(512), 512u);
  EXPECT_EQ(DeviceAllocator::BucketSize(513), 1024u);
  EXPECT_EQ(DeviceAllocator::BucketSize(1 << 20), size_t{1} << 20);
  EXPECT_EQ(DeviceAllocator::BucketSize((1 << 20) + 1), (size_t{5} << 20) / 4);
  EXPECT_EQ(DeviceAllocator::BucketSize(size_t{5} << 20), size_t{5} << 20);
  EXPECT_EQ(DeviceAllocator::BucketSize((size_t{5} << 20) + 1), size_t{6} << 20);
  for (size_t bytes = 1; bytes < (size_t{1} << 32); bytes = bytes * 3 + 7) {
    const size_t bucket = DeviceAllocator::BucketSize(bytes);
    EXPECT_GE(bucket, bytes);
    EXPECT_LE(bucket, bytes + bytes / 4 + 512) << bytes;
  }
}

class DeviceAllocatorDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
    auto stream = Stream::Create(0);
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = std::make_unique<Stream>(std::move(*stream));
  }
  std::unique_ptr<Stream> stream_;
};

TEST_F(DeviceAllocatorDeviceTest, TrainingLikeCyclesStopAllocatingAfterTheFirst) {
  DeviceAllocator& allocator = DeviceAllocator::ForDevice(0);
  // The tensors of one step of a small CNN: activations, filters, gradients,
  // logits; each freed before the next step allocates them again.
  const std::vector<Shape> shapes = {
      {64, 32, 32, 32}, {3, 3, 32, 64}, {64, 16, 16, 64}, {64, 16384}, {16384, 10},
      {64, 10},         {64},           {64, 32, 32, 32}};
  auto step = [&] {
    std::vector<Tensor> live;
    for (const Shape& s : shapes) {
      auto t = allocator.AllocateTensor(DType::kFloat32, s, stream_->get());
      ASSERT_TRUE(t.ok()) << t.status();
      live.push_back(std::move(*t));
    }
  };
  step();
  const DeviceAllocator::Stats after_first = allocator.GetStats();
  for (int i = 0; i < 1000; ++i) step();
  const DeviceAllocator::Stats after = allocator.GetStats();
  EXPECT_EQ(after.device_allocations, after_first.device_allocations);
  EXPECT_EQ(after.bytes_cached + after.bytes_in_use,
            after_first.bytes_cached + after_first.bytes_in_use);
  EXPECT_GE(after.cache_hits - after_first.cache_hits, 1000 * static_cast<int64_t>(shapes.size()));
  EXPECT_EQ(after.bytes_in_use, after_first.bytes_in_use);
}

TEST_F(DeviceAllocatorDeviceTest, BlocksAreReusedOnlyOnTheirStream) {
  DeviceAllocator& allocator = DeviceAllocator::ForDevice(0);
  auto other = Stream::Create(0);
  ASSERT_TRUE(other.ok());
  auto a = allocator.Allocate(3 << 20, stream_->get());
  ASSERT_TRUE(a.ok());
  allocator.Free(*a);
  auto b = allocator.Allocate(3 << 20, other->get());
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*b, *a);  // a may still be read by work on stream_
  auto c = allocator.Allocate(3 << 20, stream_->get());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a);
  allocator.Free(*b);
  allocator.Free(*c);
}

TEST_F(DeviceAllocatorDeviceTest, EmptyCacheReleasesFreedBlocks) {
  DeviceAllocator& allocator = DeviceAllocator::ForDevice(0);
  {
    auto t = allocator.AllocateTensor(DType::kFloat32, Shape{1 << 20}, stream_->get());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->device(), Device::Cuda(0));
  }
  EXPECT_GT(allocator.GetStats().bytes_cached, 0);
  ASSERT_TRUE(allocator.EmptyCache().ok());
  EXPECT_EQ(allocator.GetStats().bytes_cached, 0);
}

TEST_F(DeviceAllocatorDeviceTest, PeakTracksTheMostInUse) {
  DeviceAllocator& allocator = DeviceAllocator::ForDevice(0);
  const int64_t base = allocator.GetStats().bytes_in_use;
  auto a = allocator.Allocate(8 << 20, stream_->get());
  auto b = allocator.Allocate(8 << 20, stream_->get());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GE(allocator.GetStats().peak_bytes_in_use, base + (16 << 20));
  allocator.Free(*a);
  allocator.Free(*b);
  EXPECT_EQ(allocator.GetStats().bytes_in_use, base);
}

}  // namespace
}  // namespace sluice::train::backend::cuda
