#include "train/backend/cuda/kernel_timer.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/trace_recorder.h"

namespace sluice::train::backend::cuda {
namespace {

// The timer whose Scope this thread holds: an op the backend runs inside another is not timed
// again (and does not take the lock it already holds).
thread_local const KernelTimer* timing_on_this_thread = nullptr;

int64_t Ns(float ms) { return static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6)); }

}  // namespace

KernelTimer::KernelTimer(int device) : device_(device), track_(absl::StrCat("cuda:", device)) {
  flush_hook_ = profiler::RegisterFlushHook([this] { Flush(); });
}

KernelTimer::~KernelTimer() { profiler::UnregisterFlushHook(flush_hook_); }

KernelTimer::Scope::Scope(Scope&& other) noexcept
    : timer_(std::exchange(other.timer_, nullptr)),
      name_(other.name_),
      stream_(other.stream_),
      lock_(std::move(other.lock_)),
      start_(std::move(other.start_)) {}

KernelTimer::Scope::~Scope() {
  if (timer_ == nullptr) return;
  timing_on_this_thread = nullptr;
  Event end = timer_->TakeEvent();
  if (end.get() == nullptr || !end.Record(*stream_).ok()) {
    if (start_.get() != nullptr) timer_->pool_.push_back(std::move(start_));
    if (end.get() != nullptr) timer_->pool_.push_back(std::move(end));
    return;
  }
  timer_->pending_.push_back({name_, std::move(start_), std::move(end)});
  // Bounded: past the limit, wait for the oldest rather than queue more.
  if (timer_->pending_.size() > kMaxPending) {
    (void)timer_->pending_.front().end.Synchronize();
  }
  timer_->Drain(/*wait=*/false);
}

KernelTimer::Scope KernelTimer::Time(const char* op, const Stream& stream) {
  Scope scope;
  if (!profiler::Active() || timing_on_this_thread == this) return scope;
  scope.lock_ = std::unique_lock<std::mutex>(mu_);
  if (!anchored_) {
    // The profile's first op: anchor device time to the host clock, and drop what an earlier
    // profile left (its spans belong to no trace now).
    pending_.clear();
    if (anchor_.get() == nullptr) anchor_ = TakeEvent();
    if (anchor_.get() == nullptr || !anchor_.Record(stream).ok() || !anchor_.Synchronize().ok()) {
      return Scope();
    }
    anchor_ns_ = profiler::NowNs();
    anchored_ = true;
  }
  scope.start_ = TakeEvent();
  if (scope.start_.get() == nullptr || !scope.start_.Record(stream).ok()) {
    if (scope.start_.get() != nullptr) pool_.push_back(std::move(scope.start_));
    return Scope();
  }
  scope.timer_ = this;
  scope.name_ = op;
  scope.stream_ = &stream;
  timing_on_this_thread = this;
  return scope;
}

Event KernelTimer::TakeEvent() {
  if (!pool_.empty()) {
    Event e = std::move(pool_.back());
    pool_.pop_back();
    return e;
  }
  absl::StatusOr<Event> e = Event::Create(device_, /*timing=*/true);
  return e.ok() ? *std::move(e) : Event();
}

void KernelTimer::Drain(bool wait) {
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    if (wait) {
      if (!p.end.Synchronize().ok()) break;
    } else {
      const absl::StatusOr<bool> done = p.end.Done();
      if (!done.ok() || !*done) break;
    }
    // The duration from the op's own events: a float of milliseconds since the anchor loses
    // microseconds after minutes, its difference to the start would lose them every time.
    const absl::StatusOr<float> start = p.start.MillisecondsSince(anchor_);
    const absl::StatusOr<float> duration = p.end.MillisecondsSince(p.start);
    if (start.ok() && duration.ok()) {
      const int64_t begin_ns = anchor_ns_ + Ns(*start);
      profiler::RecordTrackSpan(track_.c_str(), "kernel", p.name, begin_ns,
                                begin_ns + Ns(*duration));
    }
    pool_.push_back(std::move(p.start));
    pool_.push_back(std::move(p.end));
    pending_.pop_front();
  }
}

void KernelTimer::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  Drain(/*wait=*/true);
  pending_.clear();   // what is left failed to complete
  anchored_ = false;  // the next profile takes its own anchor
}

}  // namespace sluice::train::backend::cuda
