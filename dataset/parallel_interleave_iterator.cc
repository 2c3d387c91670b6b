#include "dataset/parallel_interleave_iterator.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "dataset/interleave_iterator.h"
#include "dataset/knob.h"

namespace sluice::internal {
namespace {

// Results buffered per slot in parallel mode: a block at a time, at least two
// so a worker reads the next element while the consumer takes one, and at
// most 16 so that large elements (decoded images) stay bounded.
int64_t SlotBufferCapacity(int64_t block_length) {
  return std::clamp<int64_t>(block_length, 2, 16);
}

// Past that block, a slot buffers more while it holds under this many bytes and
// kMaxSmallElementCapacity elements: small elements (records of a few KB) get deep buffers, and a
// worker woken at a slot's low-water mark (half of either bound) reads half a buffer per wake-up
// instead of one element. With two elements a slot, every element cost a wake-up each way, ~14 us
// on 2 cores, more than reading a record. Counted per slot, in bytes, so that a slot of large
// elements stays a block deep whatever its neighbours hold.
constexpr int64_t kSlotBufferBytes = 64 << 10;
constexpr int64_t kMaxSmallElementCapacity = 64;

class ParallelInterleaveIterator : public InterleaveIterator {
 public:
  ParallelInterleaveIterator(const InterleaveDataset* d, const IteratorContext& ctx,
                             std::unique_ptr<IteratorBase> input)
      : InterleaveIterator(d, ctx, std::move(input), NodeKind::kInterleave),
        signal_(std::make_shared<Signal>()),
        inner_cancel_(std::make_shared<CancellationManager>()) {
    deterministic_ = d->interleave_options().deterministic.value_or(ctx.deterministic());
    const int requested = d->interleave_options().num_parallel_calls;
    Tunable& p = stats().parallelism;
    p.DeclareFromOption(requested, /*autotune_max=*/cycle_length_);
    num_workers_ = p.max;
    base_capacity_ = SlotBufferCapacity(block_length_);
    future_limit_ = cycle_length_;
    // Inner pipelines get a cancellation of their own, so that destroying this
    // iterator wakes their blocked waits even when the pipeline goes on.
    inner_ctx_ = ctx;
    inner_ctx_.cancellation = inner_cancel_;
    cancel_token_ = ctx.cancellation->Register([s = signal_, inner = inner_cancel_] {
      s->Cancel();
      inner->Cancel();
    });
  }

  ~ParallelInterleaveIterator() override {
    signal_->Cancel();
    inner_cancel_->Cancel();
    for (std::thread& w : workers_) w.join();
    ctx().cancellation->Deregister(cancel_token_);
    // The inner iterators go with the members, now that no worker uses them.
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    MutexLock l(&signal_->mu);
    if (workers_.empty()) {
      for (int64_t i = 0; i < num_workers_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
    }
    while (true) {
      if (signal_->cancelled) return absl::CancelledError("iterator destroyed");
      Result out;
      const Step step = deterministic_ ? StepInOrder(&out) : StepAny(&out);
      // Room in a buffer, a slot closed or a future taken: a sleeping worker may have work.
      WakeWorkerIfDue();
      if (step == Step::kReturn) return out;
      if (step == Step::kWait) {
        profiler::Span span("wait", profiler::Active() ? WaitSpanName() : nullptr);
        WaitAsConsumer();
      }
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    signal_->mu.Lock();
    // Quiesce: no new jobs; wait for the workers' current ones.
    paused_ = true;
    while (!signal_->cancelled && active_ != 0) WaitAsConsumer();
    absl::Status s = absl::CancelledError("iterator destroyed");
    if (!signal_->cancelled) {
      // Saved unlocked, as Prefetch saves its input: a cancellation takes the lock before it
      // cancels the inner pipelines, so an inner Save waiting on something only a cancellation
      // ends (a blocked generator or map function) would otherwise wait forever.
      signal_->mu.Unlock();
      s = SaveWhilePaused(state);
      signal_->mu.Lock();
    }
    paused_ = false;
    signal_->worker_cv.SignalAll();
    signal_->mu.Unlock();
    return s;
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    {
      MutexLock l(&signal_->mu);
      if (!workers_.empty()) {
        return absl::FailedPreconditionError("Interleave: Restore after the first GetNext");
      }
    }
    // Restored unlocked, as it is saved: a cancellation takes the lock before it cancels the
    // inner pipelines, and restoring them recomputes their saved elements (map functions).
    SLUICE_RETURN_IF_ERROR(RestoreBeforeStart(state));
    MutexLock l(&signal_->mu);
    buffered_elements_ = buffered_bytes_ = 0;
    for (const auto& slot : cycle_) {
      if (slot != nullptr) CountBuffered(*slot, +1);
    }
    for (const auto& future : futures_) CountBuffered(*future, +1);
    return absl::OkStatus();
  }

 private:
  // What the cancellation callback touches; it may run while we are destroyed. The consumer
  // (GetNext, or Save waiting for quiet) and the workers wait on conditions of their own, and each
  // side wakes the other only when it sleeps and has something to do: a wake-up per element each
  // way cost more than a small element's read.
  struct Signal {
    Mutex mu;
    CondVar consumer_cv;
    CondVar worker_cv;
    bool cancelled ABSL_GUARDED_BY(mu) = false;

    void Cancel() {
      MutexLock l(&mu);
      cancelled = true;
      consumer_cv.SignalAll();
      worker_cv.SignalAll();
    }
  };
  enum class Step { kReturn, kAgain, kWait };
  enum class JobKind { kNone, kInput, kInner };
  struct Job {
    JobKind kind = JobKind::kNone;
    InnerPipeline* inner = nullptr;
  };

  int64_t Parallelism() const {
    return std::max<int64_t>(1, parallelism_->value.load(std::memory_order_relaxed));
  }

  // SaveState with signal_->mu released, which the analysis cannot follow: paused_ is set and no
  // job is under way (active_ == 0), so the workers touch neither the cycle, the futures nor the
  // input until SaveInternal clears paused_ (FindJob returns no job while paused).
  absl::Status SaveWhilePaused(proto::IteratorStateProto* state) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return SaveState(state, futures_);
  }

  // RestoreState with signal_->mu released, which the analysis cannot follow: no worker has
  // started (they start at the first GetNext), so nothing else touches the cycle, the futures or
  // the input.
  absl::Status RestoreBeforeStart(const proto::IteratorStateProto& state)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return RestoreState(state, inner_ctx_, &futures_);
  }

  // The consumer's step in tf.data's order (the sequential loop, reading
  // buffers instead of inner iterators).
  Step StepInOrder(Result* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    if (end_of_input_ && num_open_ == 0) {
      *out = std::nullopt;
      return Step::kReturn;
    }
    InnerPipeline* current = cycle_[cycle_index_].get();
    if (current != nullptr) {
      if (current->buffer.empty()) return Step::kWait;
      Result r = Pop(current);
      if (IsEndOfSequence(r)) {
        CloseSlot(cycle_index_);
        AdvanceToNextInCycle();
        return Step::kAgain;
      }
      if (r.ok()) AdvancePosition();
      *out = std::move(r);
      return Step::kReturn;
    }
    if (!end_of_input_) return InstallFuture(cycle_index_, out);
    AdvanceToNextInCycle();
    return Step::kAgain;
  }

  // Whatever is ready, preferring the slot at the cycle position.
  Step StepAny(Result* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    for (int64_t s = 0; s < cycle_length_ && !end_of_input_; ++s) {
      if (cycle_[s] != nullptr) continue;
      const Step step = InstallFuture(s, out);
      if (step == Step::kReturn) return step;
      if (step == Step::kWait) break;
    }
    if (end_of_input_ && num_open_ == 0) {
      *out = std::nullopt;
      return Step::kReturn;
    }
    for (int64_t k = 0; k < cycle_length_; ++k) {
      const int64_t s = (cycle_index_ + k) % cycle_length_;
      InnerPipeline* slot = cycle_[s].get();
      if (slot == nullptr || slot->buffer.empty()) continue;
      Result r = Pop(slot);
      if (IsEndOfSequence(r)) {
        CloseSlot(s);
        if (s == cycle_index_) AdvanceToNextInCycle();
        return Step::kAgain;
      }
      if (r.ok() && s == cycle_index_) AdvancePosition();
      *out = std::move(r);
      return Step::kReturn;
    }
    return Step::kWait;
  }

  // Puts the next future (the next input element's pipeline) in `slot`. A
  // future that failed to open is returned as an error and the slot stays
  // empty, as in the sequential loop.
  Step InstallFuture(int64_t slot, Result* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    if (futures_.empty()) {
      if (input_ended_ && !input_busy_) {
        end_of_input_ = true;
        return Step::kAgain;
      }
      return Step::kWait;
    }
    if (futures_.front()->opening) return Step::kWait;
    // A worker may still be reading ahead in it: it stays at the same address.
    std::unique_ptr<InnerPipeline> next = std::move(futures_.front());
    futures_.pop_front();
    if (next->failed) {
      *out = Pop(next.get());
      return Step::kReturn;
    }
    cycle_[slot] = std::move(next);
    ++num_open_;
    return Step::kAgain;
  }

  Result Pop(InnerPipeline* inner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    Result r = std::move(inner->buffer.front());
    inner->buffer.pop_front();
    SetLastSource(*inner, inner->sources.front());
    inner->sources.pop_front();
    CountResult(*inner, r, -1);
    return r;
  }
  // Appends to an inner pipeline's buffer, with the result's source there (or none).
  void Push(InnerPipeline* inner, Result r, ElementSource source = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    inner->buffer.push_back(std::move(r));
    inner->sources.push_back(std::move(source));
    CountResult(*inner, inner->buffer.back(), +1);
  }
  const IteratorContext& InnerContext() const override { return inner_ctx_; }

  // Only ended slots close, so no worker is using the pipeline.
  void CloseSlot(int64_t s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    CountBuffered(*cycle_[s], -1);
    cycle_[s].reset();
    --num_open_;
  }

  // Counts `r`, in or out of `inner`'s buffer, in the node's totals and the pipeline's own.
  void CountResult(InnerPipeline& inner, const Result& r, int sign)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    const int64_t bytes =
        r.ok() && r->has_value() ? sign * static_cast<int64_t>(ElementByteSize(**r)) : 0;
    buffered_elements_ += sign;
    buffered_bytes_ += bytes;
    inner.buffered_bytes += bytes;
    stats().buffered_elements.store(buffered_elements_, std::memory_order_relaxed);
    stats().buffered_bytes.store(buffered_bytes_, std::memory_order_relaxed);
  }
  void CountBuffered(InnerPipeline& inner, int sign) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    for (const Result& r : inner.buffer) CountResult(inner, r, sign);
  }

  // Whether a worker may read ahead in `inner` now. Its buffer has room below a block, or, past it,
  // below kMaxSmallElementCapacity elements and kSlotBufferBytes; `low` asks instead whether it is
  // down to half of those (a sleeping worker is woken then; an awake one fills buffers to the
  // full bounds).
  bool Runnable(const InnerPipeline* inner, bool low) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    if (inner->iterator == nullptr || inner->busy || inner->ended) return false;
    const auto n = static_cast<int64_t>(inner->buffer.size());
    if (low) {
      return n <= base_capacity_ / 2 ||
             (n <= kMaxSmallElementCapacity / 2 && inner->buffered_bytes <= kSlotBufferBytes / 2);
    }
    return n < base_capacity_ ||
           (n < kMaxSmallElementCapacity && inner->buffered_bytes < kSlotBufferBytes);
  }

  // The most urgent work: opening the next input element when the cycle has
  // a hole, then the cycle's slots from the consumer's position on, then
  // opening ahead, then reading ahead in the futures. Buffers count as having room as Runnable
  // says (`low`: only those down to their low-water mark).
  Job FindJob(bool low) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    if (paused_ || active_ >= Parallelism()) return {};
    const bool input_wanted =
        !input_busy_ && !input_ended_ && static_cast<int64_t>(futures_.size()) < future_limit_;
    if (input_wanted && futures_.empty() && num_open_ < cycle_length_) {
      return {JobKind::kInput, nullptr};
    }
    for (int64_t k = 0; k < cycle_length_; ++k) {
      InnerPipeline* slot = cycle_[(cycle_index_ + k) % cycle_length_].get();
      if (slot != nullptr && Runnable(slot, low)) return {JobKind::kInner, slot};
    }
    if (input_wanted) return {JobKind::kInput, nullptr};
    for (const auto& future : futures_) {
      if (Runnable(future.get(), low)) return {JobKind::kInner, future.get()};
    }
    return {};
  }

  // Wakes one sleeping worker when there is work below the low-water mark (or an input to
  // open), for a worker that sleeps only when every buffer is full.
  void WakeWorkerIfDue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    if (idle_workers_ > 0 && FindJob(/*low=*/true).kind != JobKind::kNone) {
      signal_->worker_cv.Signal();
    }
  }

  // The consumer's wait; a worker wakes it after any job, which may be what it waits for.
  void WaitAsConsumer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    consumer_waiting_ = true;
    signal_->consumer_cv.Wait(&signal_->mu);
    consumer_waiting_ = false;
  }

  // A worker keeps taking jobs, filling buffers to their bounds, and sleeps only when none is
  // left; WakeWorkerIfDue wakes it again once a buffer is down to the low-water mark.
  void WorkerLoop() {
    MutexLock l(&signal_->mu);
    while (true) {
      Job job;
      while (!signal_->cancelled && (job = FindJob(/*low=*/false)).kind == JobKind::kNone) {
        ++idle_workers_;
        signal_->worker_cv.Wait(&signal_->mu);
        --idle_workers_;
      }
      if (signal_->cancelled) return;
      ++active_;
      stats().active_workers.fetch_add(1, std::memory_order_relaxed);
      if (job.kind == JobKind::kInput) {
        OpenNextInput();
      } else {
        ReadAhead(job.inner);
      }
      --active_;
      stats().active_workers.fetch_sub(1, std::memory_order_relaxed);
      // A result, a new future, an end or quiet for Save: whatever the consumer waits for.
      if (consumer_waiting_) signal_->consumer_cv.Signal();
      // Whatever work the job made (an opened future to read, the input free again), this worker
      // takes next; a second job wakes another as it claims its own.
    }
  }

  // Reads the next input element and makes its pipeline, appended to the
  // futures in input order. The pipeline is made without the lock (fn may
  // open a file), and the input is free for the next worker meanwhile.
  void OpenNextInput() ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    input_busy_ = true;
    WakeWorkerIfDue();  // for work beyond this job
    signal_->mu.Unlock();
    Result in;
    {
      ScopedTimer t(&stats().busy_ns);
      in = input_->GetNext();
    }
    // Still the input's only reader (input_busy_).
    ElementSource input_source;
    if (in.ok() && in->has_value()) input_source = SourceOfLast(*input_);
    signal_->mu.Lock();
    input_busy_ = false;
    if (IsEndOfSequence(in)) {
      input_ended_ = true;
      return;
    }
    auto entry = std::make_unique<InnerPipeline>();
    InnerPipeline* future = entry.get();
    if (!in.ok()) {  // Named by the input; takes its place in order.
      future->failed = true;
      Push(future, in.status());
      futures_.push_back(std::move(entry));
      return;
    }
    future->input_source = std::move(input_source);
    future->index = next_index_++;
    future->input = std::move(**in);
    future->busy = future->opening = true;
    futures_.push_back(std::move(entry));
    WakeWorkerIfDue();  // the input is free again while this worker opens the future
    signal_->mu.Unlock();
    std::shared_ptr<const DatasetBase> dataset;
    std::unique_ptr<IteratorBase> iterator;
    absl::Status made;
    {
      ScopedTimer t(&stats().busy_ns);
      // On this worker thread, outside any GetNext: MakeInner turns the user's function's
      // exceptions into its errors, and this the inner pipeline's construction's (an
      // allocation), which would end the process here.
      made = ExceptionsAsStatus([&] {
        return d_->MakeInner(inner_ctx_, future->input, future->index, &dataset, &iterator);
      });
    }
    if (!made.ok()) made = Annotate(made, future->index);
    signal_->mu.Lock();
    future->busy = future->opening = false;
    if (made.ok()) {
      future->dataset = std::move(dataset);
      future->iterator = std::move(iterator);
    } else {
      future->failed = true;
      Push(future, made);
    }
  }

  // One GetNext on an inner iterator, into its buffer.
  void ReadAhead(InnerPipeline* inner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(signal_->mu) {
    inner->busy = true;
    WakeWorkerIfDue();  // for work beyond this job
    signal_->mu.Unlock();
    Result r;
    {
      ScopedTimer t(&stats().busy_ns);
      r = inner->iterator->GetNext();
    }
    // Only while it recomputes (its input's source known) and is ours (busy).
    ElementSource source;
    if (r.ok() && r->has_value() && !inner->input_source.empty()) {
      source = SourceOfLast(*inner->iterator);
    }
    signal_->mu.Lock();
    inner->busy = false;
    std::unique_ptr<IteratorBase> finished;
    std::shared_ptr<const DatasetBase> finished_dataset;
    if (IsEndOfSequence(r)) {
      inner->ended = true;
      finished = std::move(inner->iterator);
      finished_dataset = std::move(inner->dataset);
    }
    Push(inner, std::move(r), std::move(source));
    if (finished != nullptr) {
      // Destroyed without the lock: its destructor may wait on its threads.
      signal_->mu.Unlock();
      finished.reset();
      finished_dataset.reset();
      signal_->mu.Lock();
    }
  }

  std::shared_ptr<Signal> signal_;
  std::shared_ptr<CancellationManager> inner_cancel_;
  IteratorContext inner_ctx_;
  Tunable* parallelism_ = &stats().parallelism;
  bool deterministic_ = true;
  int64_t num_workers_ = 1;
  int64_t base_capacity_ = 2;
  int64_t future_limit_ = 1;
  int64_t cancel_token_ = -1;
  // Guarded by signal_->mu here, as the cycle state of the base class is (which the sequential
  // iterator uses without a lock, so it carries no annotation).
  Futures futures_ ABSL_GUARDED_BY(signal_->mu);
  bool input_busy_ ABSL_GUARDED_BY(signal_->mu) = false;
  bool paused_ ABSL_GUARDED_BY(signal_->mu) = false;
  bool consumer_waiting_ ABSL_GUARDED_BY(signal_->mu) = false;
  int64_t idle_workers_ ABSL_GUARDED_BY(signal_->mu) = 0;  // asleep in WorkerLoop
  int64_t active_ ABSL_GUARDED_BY(signal_->mu) = 0;
  int64_t buffered_elements_ ABSL_GUARDED_BY(signal_->mu) = 0;
  int64_t buffered_bytes_ ABSL_GUARDED_BY(signal_->mu) = 0;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(signal_->mu);
};

}  // namespace

std::unique_ptr<IteratorBase> MakeParallelInterleaveIterator(const InterleaveDataset* d,
                                                             const IteratorContext& ctx,
                                                             std::unique_ptr<IteratorBase> input) {
  return std::make_unique<ParallelInterleaveIterator>(d, ctx, std::move(input));
}

}  // namespace sluice::internal
