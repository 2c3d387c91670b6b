// The CUDA backend's device spans (train/backend/cuda/kernel_timer.h): while the profiler records,
// each op's work on the stream becomes one span on the track "cuda:N", on the host spans' clock; an
// op the backend runs inside another is part of the outer one's span; off, nothing is timed.

#include "train/backend/cuda/kernel_timer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/trace_recorder.h"
#include "train/backend/cuda/cuda_backend.h"

namespace sluice::train::backend::cuda {
namespace {

using train::backend::BinaryOp;
using train::backend::UnaryOp;

// The spans of the track `name`, oldest first; empty when it recorded none.
std::vector<profiler::TraceEvent> Track(const std::vector<profiler::ThreadTrace>& threads,
                                        const std::string& name) {
  for (const profiler::ThreadTrace& t : threads) {
    if (t.tid >= profiler::kFirstTrackTid && t.name == name) return t.events;
  }
  return {};
}

class KernelTimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device: device spans need a GPU";
    absl::StatusOr<std::unique_ptr<CudaBackend>> b = CudaBackend::Create(0, {});
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = *std::move(b);
  }

  Tensor Make(const Shape& shape, float value) {
    absl::StatusOr<Tensor> t = backend_->Allocate(DType::kFloat32, shape);
    EXPECT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(backend_->Fill(*t, value).ok());
    return *std::move(t);
  }

  std::unique_ptr<CudaBackend> backend_;
};

TEST_F(KernelTimerTest, EachOpIsOneDeviceSpanWithinTheHostTimeThatQueuedIt) {
  Tensor a = Make({1024, 1024}, 0.5f), b = Make({1024, 1024}, 0.25f), out = Make({1024, 1024}, 0);
  Tensor relu = Make({1024, 1024}, 0);
  Tensor row = Make({1, 1024}, 1), grad_a = Make({1024, 1024}, 0), grad_row = Make({1, 1024}, 0);
  Tensor host(DType::kFloat32, {1024, 1024});
  ASSERT_TRUE(backend_->Synchronize().ok());

  profiler::BeginRecording(1 << 16, /*counter_interval_ms=*/0);
  int64_t host_begin = 0, host_end = 0;
  {
    const int64_t t0 = profiler::NowNs();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(backend_->MatMul(a, false, b, false, out).ok());
    ASSERT_TRUE(backend_->Unary(UnaryOp::kRelu, out, relu).ok());
    // Broadcast: the backward sums grad_out over the rows (a Reduce inside this op).
    ASSERT_TRUE(backend_->BinaryBackward(BinaryOp::kAdd, a, row, relu, &grad_a, &grad_row).ok());
    ASSERT_TRUE(backend_->Copy(relu, host).ok());  // waits for the stream
    const int64_t t1 = profiler::NowNs();
    profiler::RecordSpan("test", "host", t0, t1);
  }
  int64_t dropped = 0;
  const std::vector<profiler::ThreadTrace> threads = profiler::EndRecording(&dropped);
  for (const profiler::ThreadTrace& t : threads) {
    if (t.tid >= profiler::kFirstTrackTid) continue;
    for (const profiler::TraceEvent& e : t.events) {
      if (std::string(e.name) == "host") {
        host_begin = e.start_ns;
        host_end = e.start_ns + e.dur_ns;
      }
    }
  }
  ASSERT_GT(host_end, host_begin);
  const std::vector<profiler::TraceEvent> spans = Track(threads, "cuda:0");
  std::map<std::string, int> count;
  int64_t previous_end = 0;
  for (const profiler::TraceEvent& e : spans) {
    ++count[e.name];
    EXPECT_STREQ(e.category, "kernel");
    EXPECT_GT(e.dur_ns, 0) << e.name;
    // One stream: its ops run one after another (to the microsecond the float times keep).
    EXPECT_GE(e.start_ns, previous_end - 1000) << e.name << " overlaps the op before it";
    previous_end = e.start_ns + e.dur_ns;
    // A kernel runs after the host queued it, and the Copy's wait saw all of them end (the
    // anchor's wait latency may place them late by microseconds: 1 ms of slack).
    EXPECT_GE(e.start_ns, host_begin) << e.name;
    EXPECT_LE(e.start_ns + e.dur_ns, host_end + 1'000'000) << e.name;
  }
  EXPECT_EQ(count["MatMul"], 5);
  EXPECT_EQ(count["Unary"], 1);
  EXPECT_EQ(count["BinaryBackward"], 1);
  EXPECT_EQ(count["Reduce"], 0) << "the Reduce inside BinaryBackward is part of its span";
  EXPECT_EQ(count["Copy"], 1);
  EXPECT_EQ(spans.size(), 8u);

  // Off: the same ops, then an empty profile: nothing on the track.
  ASSERT_TRUE(backend_->MatMul(a, false, b, false, out).ok());
  ASSERT_TRUE(backend_->Synchronize().ok());
  profiler::BeginRecording(1 << 16, 0);
  EXPECT_TRUE(Track(profiler::EndRecording(&dropped), "cuda:0").empty());
}

}  // namespace
}  // namespace sluice::train::backend::cuda
