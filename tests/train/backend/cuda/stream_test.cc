#include "train/backend/cuda/stream.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "train/backend/cuda/cuda_backend.h"

namespace sluice::train::backend::cuda {
namespace {

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device: this test needs a GPU";
  }
};

TEST_F(StreamTest, EventsOrderAndTimeWork) {
  auto stream = Stream::Create(0);
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto start = Event::Create(0, /*timing=*/true);
  auto end = Event::Create(0, /*timing=*/true);
  ASSERT_TRUE(start.ok() && end.ok());
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 256 << 20), cudaSuccess);
  ASSERT_TRUE(start->Record(*stream).ok());
  ASSERT_EQ(cudaMemsetAsync(p, 1, 256 << 20, stream->get()), cudaSuccess);
  ASSERT_TRUE(end->Record(*stream).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  auto done = end->Done();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  auto ms = end->MillisecondsSince(*start);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0f);
  cudaFree(p);
}

TEST_F(StreamTest, AStreamWaitsForAnEventOfAnother) {
  auto producer = Stream::Create(0);
  auto consumer = Stream::Create(0);
  auto ready = Event::Create(0);
  ASSERT_TRUE(producer.ok() && consumer.ok() && ready.ok());
  const size_t n = 64 << 20;
  void* src = nullptr;
  void* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, n), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(src, 7, n, producer->get()), cudaSuccess);
  ASSERT_TRUE(ready->Record(*producer).ok());
  ASSERT_TRUE(consumer->Wait(*ready).ok());
  ASSERT_EQ(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, consumer->get()), cudaSuccess);
  ASSERT_TRUE(consumer->Synchronize().ok());
  unsigned char last = 0;
  ASSERT_EQ(cudaMemcpy(&last, static_cast<char*>(dst) + n - 1, 1, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(last, 7);
  cudaFree(src);
  cudaFree(dst);
}

TEST_F(StreamTest, MovedFromStreamOwnsNothing) {
  auto a = Stream::Create(0);
  ASSERT_TRUE(a.ok());
  const cudaStream_t raw = a->get();
  Stream b = std::move(*a);
  EXPECT_EQ(b.get(), raw);
  EXPECT_EQ(a->get(), nullptr);
}

}  // namespace
}  // namespace sluice::train::backend::cuda
