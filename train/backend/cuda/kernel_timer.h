#ifndef SLUICE_TRAIN_BACKEND_CUDA_KERNEL_TIMER_H_
#define SLUICE_TRAIN_BACKEND_CUDA_KERNEL_TIMER_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "train/backend/cuda/stream.h"

namespace sluice::train::backend::cuda {

// The device half of the profiler (profiler/profiler.h): while a profile records, each backend
// op's work on the stream is bracketed by two timing events, and once the second has passed, the
// op's device time goes into the trace as a span on the track "cuda:N" (category "kernel",
// profiler::RecordTrackSpan). Ops whose end has not passed yet wait in a queue that the next op
// drains without blocking, and that the profiler's Stop flushes (a flush hook); past
// kMaxPending, the oldest is waited for, so memory stays bounded.
//
// Device times map onto the host clock through an anchor event, recorded and waited for when a
// profile's first op is timed: its device time is taken as the host time the wait returned, so
// device spans may sit late by that wait's latency (microseconds).
//
// While recording, ops are submitted one at a time (a Scope holds the timer's lock) so that two
// threads' ops cannot interleave their events on the one stream; an op the backend runs inside
// another (a reduction inside a gradient) is part of the outer op's span. Off, Time() costs one
// relaxed atomic load and records nothing.
class KernelTimer {
 public:
  static constexpr size_t kMaxPending = 4096;

  explicit KernelTimer(int device);
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  // Times the work queued on `stream` between Time() and the Scope's destruction.
  class Scope {
   public:
    Scope() = default;
    Scope(Scope&& other) noexcept;
    Scope& operator=(Scope&&) = delete;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();

   private:
    friend class KernelTimer;
    KernelTimer* timer_ = nullptr;
    const char* name_ = nullptr;
    const Stream* stream_ = nullptr;
    std::unique_lock<std::mutex> lock_;
    Event start_;
  };
  // `op` must outlive the profile (a literal). A CUDA error while timing leaves the op's span
  // out; the op itself is unaffected.
  Scope Time(const char* op, const Stream& stream);

 private:
  struct Pending {
    const char* name;
    Event start, end;
  };
  // Records the spans of the pending ops whose end has passed, oldest first; with `wait`, of all.
  // Call with mu_ held.
  void Drain(bool wait);
  // A timing event from the pool (or a new one); an empty event on failure. Call with mu_ held.
  Event TakeEvent();
  void Flush();

  const int device_;
  const std::string track_;  // "cuda:N"
  int flush_hook_ = -1;
  std::mutex mu_;
  std::deque<Pending> pending_;
  std::vector<Event> pool_;
  bool anchored_ = false;  // for the profile now recording
  Event anchor_;
  int64_t anchor_ns_ = 0;
};

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_KERNEL_TIMER_H_
