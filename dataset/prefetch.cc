// Prefetch(buffer_size): a producer thread of its own pulls the input ahead of
// the consumer into a bounded buffer. The bound is the node's `buffer_size`
// knob, read every time the producer decides whether to pull again, so the
// AUTOTUNE controller can change it at run time. Errors take their place in
// the buffer in order, between the elements, and the producer carries on
// after them (internal iterators are not sticky).
//
// The consumer takes everything buffered in one locked step and returns it
// without the lock, and each side notifies the other only when it sleeps:
// handing an element over costs a lock and a system call only when one side
// has caught up with the other.
//
// The producer starts at the first GetNext, so that Restore comes first; Save
// pauses it between two pulls and saves the buffer. Destroying the iterator
// wakes and joins the producer; a producer blocked inside a synchronous user
// function of its input finishes that call first (a parallel input, woken by
// the pipeline's cancellation, returns at once).
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "dataset/buffered_entry.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/knob.h"

namespace sluice {
namespace {

// kAutotune starts at double buffering: while the consumer works on one
// element the producer makes the next, which hides the producer's latency
// whenever it is no slower than the consumer; AUTOTUNE grows it when the
// consumer waits.
constexpr int64_t kAutotuneInitialBuffer = 2;
// Past a few dozen elements a deeper buffer only absorbs longer stalls, it
// does not raise throughput, and for batch-sized elements 64 is already
// hundreds of MB; the controller's RAM budget may keep it lower still.
constexpr int64_t kAutotuneMaxBuffer = 64;

class PrefetchDataset : public DatasetBase {
 public:
  PrefetchDataset(std::shared_ptr<const DatasetBase> input, int64_t buffer_size)
      : DatasetBase("Prefetch", {std::move(input)}), buffer_size_(buffer_size) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    return buffer_size_ == kAutotune ? std::string("Prefetch(autotune)")
                                     : absl::StrCat("Prefetch(", buffer_size_, ")");
  }

  int64_t buffer_size() const { return buffer_size_; }

 private:
  int64_t buffer_size_;
};

class PrefetchIterator : public IteratorBase {
 public:
  PrefetchIterator(const PrefetchDataset* d, const IteratorContext& ctx,
                   std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kAsync), input_(std::move(input)) {
    if (d->buffer_size() == kAutotune) {
      stats().buffer_size.DeclareTunable(/*initial=*/kAutotuneInitialBuffer, /*lo=*/1,
                                         /*hi=*/kAutotuneMaxBuffer);
    } else {
      stats().buffer_size.DeclareFixed(d->buffer_size());
    }
    cancel_token_ = ctx.cancellation->Register([this] { Cancel(); });
  }

  ~PrefetchIterator() override {
    Cancel();
    if (producer_.joinable()) producer_.join();
    ctx().cancellation->Deregister(cancel_token_);
    // Whatever is still buffered leaves the node's counts.
    for (const auto* q : {&ready_, &shared_}) {
      for (const Entry& e : *q) Uncount(e);
    }
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    if (ready_.empty()) {
      // Take everything the producer has buffered in one locked step; the
      // next calls are served without the lock.
      MutexLock l(&mu_);
      if (!started_) {
        started_ = true;
        if (!input_ended_) producer_ = std::thread([this] { ProducerLoop(); });
      }
      NoteUnderrun();
      while (!cancelled_ && shared_.empty()) WaitAsConsumer();
      consumer_waiting_ = false;
      if (cancelled_) return absl::CancelledError("iterator destroyed");
      ready_.swap(shared_);
      ready_count_.store(static_cast<int64_t>(ready_.size()));
      shared_count_.store(0);
    }
    Entry& front = ready_.front();
    if (IsEndOfSequence(front.result)) {
      return std::nullopt;  // Keep the end marker: every later call ends too.
    }
    // Taken apart rather than moved whole: GCC 12 misreads moving the
    // StatusOr<optional<vector>> as a use of uninitialised memory.
    absl::Status status = front.result.status();
    Element element = status.ok() ? std::move(**front.result) : Element();
    last_source_ = std::move(front.source);
    Uncount(front);
    ready_.pop_front();
    // Sequentially consistent with the producer's producer_waiting_ store
    // and its read of ready_count_: one of the two sees the other.
    ready_count_.fetch_sub(1);
    if (producer_waiting_.load() && Buffered() < BufferSize()) WakeProducer();
    if (!status.ok()) return status;
    return std::optional<Element>(std::move(element));
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    mu_.Lock();
    // Quiesce: the producer finishes the pull it is in and starts no other.
    paused_ = true;
    while (!cancelled_ && fetching_) WaitAsConsumer();
    consumer_waiting_ = false;
    absl::Status s;
    if (cancelled_) {
      s = absl::CancelledError("iterator destroyed");
    } else {
      (*state->mutable_ints())["input_ended"] = input_ended_;
      for (const auto* q : {&ready_, &shared_}) {
        for (const Entry& e : *q) BufferedToProto(e.result, e.source, state->add_buffer());
      }
      // The paused producer does not touch the input: save it unlocked, so
      // that a cancellation callback never waits for the input's Save.
      mu_.Unlock();
      s = SaveInput(input_.get(), state);
      mu_.Lock();
    }
    paused_ = false;
    const bool wake = producer_waiting_.load();
    mu_.Unlock();
    if (wake) producer_cv_.Signal();
    return s;
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    {
      MutexLock l(&mu_);
      if (started_) {
        return absl::FailedPreconditionError("Prefetch: Restore after the first GetNext");
      }
    }
    // No producer yet: the input is restored, and the saved elements recomputed through it (a
    // map function's time), without the lock, which a cancellation callback takes.
    SLUICE_RETURN_IF_ERROR(RestoreInput(input_.get(), state));
    SLUICE_ASSIGN_OR_RETURN(SavedBuffer saved, ReadSavedBuffer(state, *this, input_.get()));
    MutexLock l(&mu_);
    input_ended_ = saved.input_ended;
    for (size_t i = 0; i < saved.results.size(); ++i) {
      Push(std::move(saved.results[i]), std::move(saved.sources[i]), /*from_input=*/false);
    }
    return absl::OkStatus();
  }

  bool DescribeLastInternal(ElementSource* out) override { return AppendSource(last_source_, out); }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    return input_->Recompute(source);  // The producer has not started: the input is free.
  }
  // As GetNextInternal waits, up to `deadline`; the entry stays for GetNext.
  NextReadiness WaitForNextInternal(std::chrono::steady_clock::time_point deadline) override {
    if (!ready_.empty()) return NextReadiness::kReady;
    MutexLock l(&mu_);
    if (!started_) return NextReadiness::kUnknown;  // GetNext starts the producer
    NoteUnderrun();
    while (!cancelled_ && shared_.empty() && std::chrono::steady_clock::now() < deadline) {
      WaitAsConsumer(deadline);
    }
    consumer_waiting_ = false;
    // Cancelled, GetNext returns its error at once.
    return cancelled_ || !shared_.empty() ? NextReadiness::kReady : NextReadiness::kNotYet;
  }

 private:
  struct Entry : BufferedEntry {
    // An element the producer took from the input, counted in NodeStats::inputs_held until it
    // leaves the buffer (not one restored from a checkpoint: the input never handed it over).
    bool held = false;
  };

  void Cancel() {
    MutexLock l(&mu_);
    cancelled_ = true;
    consumer_cv_.SignalAll();
    producer_cv_.SignalAll();
  }

  int64_t BufferSize() const {
    return std::max<int64_t>(1, buffer_size_knob_->value.load(std::memory_order_relaxed));
  }
  // Entries the producer has made and the consumer not yet returned.
  int64_t Buffered() const { return shared_count_.load() + ready_count_.load(); }
  bool CanFetch() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !paused_ && !input_ended_ && Buffered() < BufferSize();
  }

  void WakeProducer() {
    mu_.Lock();
    if (!producer_waiting_.load() || !CanFetch()) {
      mu_.Unlock();
      return;
    }
    producer_waiting_.store(false);  // one notification per sleep
    mu_.Unlock();
    producer_cv_.Signal();  // unlocked: the producer does not wake into a held mutex
  }

  // Appends to the shared buffer; `from_input`: the producer pulled it.
  void Push(absl::StatusOr<std::optional<Element>> result, ElementSource source, bool from_input)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Entry e;
    e.result = std::move(result);
    e.source = std::move(source);
    CountBuffered(stats(), e);
    // Only elements: the input counts no error or end as produced.
    e.held = from_input && e.result.ok() && e.result->has_value();
    if (e.held) stats().inputs_held.fetch_add(1, std::memory_order_relaxed);
    shared_.push_back(std::move(e));
    shared_count_.store(static_cast<int64_t>(shared_.size()));
  }
  void Uncount(const Entry& e) {
    UncountBuffered(stats(), e);
    if (e.held) stats().inputs_held.fetch_sub(1, std::memory_order_relaxed);
  }

  // The consumer is about to wait for an element: if the buffer had filled since the last time,
  // it is too shallow for the hand-offs (see NodeStats::underruns).
  void NoteUnderrun() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!filled_ || cancelled_ || !shared_.empty()) return;
    filled_ = false;
    stats().underruns.fetch_add(1, std::memory_order_relaxed);
  }

  // Waits on consumer_cv_ once (until `deadline` at the latest, if any); the caller loops until its
  // condition holds, then clears consumer_waiting_. The producer clears it when it signals, so that
  // it signals (a system call) once per sleep.
  void WaitAsConsumer(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    consumer_waiting_ = true;
    // The profiler shows when the buffer ran dry and for how long.
    profiler::Span span("prefetch", profiler::Active() ? WaitSpanName() : nullptr);
    if (deadline) {
      consumer_cv_.WaitUntil(&mu_, *deadline);
    } else {
      consumer_cv_.Wait(&mu_);
    }
  }

  void ProducerLoop() {
    pthread_setname_np(pthread_self(), "prefetch");  // how profiles and debuggers show it
    MutexLock l(&mu_);
    while (true) {
      if (!cancelled_ && !CanFetch()) {
        while (!cancelled_) {
          // Set before the check: see GetNextInternal.
          producer_waiting_.store(true);
          if (CanFetch()) break;
          if (Buffered() >= BufferSize()) filled_ = true;
          producer_cv_.Wait(&mu_);
        }
        producer_waiting_.store(false);
      }
      if (cancelled_) return;
      fetching_ = true;
      mu_.Unlock();
      stats().active_workers.store(1, std::memory_order_relaxed);
      absl::StatusOr<std::optional<Element>> result = input_->GetNext();
      stats().active_workers.store(0, std::memory_order_relaxed);
      ScopedTimer busy(&stats().busy_ns);
      const bool end = IsEndOfSequence(result);
      ElementSource source;
      if (result.ok() && !end) source = SourceOfLast(*input_);
      mu_.Lock();
      fetching_ = false;
      if (cancelled_) return;  // Nobody will read it.
      if (end) input_ended_ = true;
      Push(std::move(result), std::move(source), /*from_input=*/true);
      if (consumer_waiting_) {
        consumer_waiting_ = false;  // GetNext or Save, never both at once
        mu_.Unlock();
        consumer_cv_.Signal();
        mu_.Lock();
      }
      if (end) return;
    }
  }

  std::unique_ptr<IteratorBase> input_;
  Tunable* const buffer_size_knob_ = &stats().buffer_size;
  int64_t cancel_token_ = -1;
  std::thread producer_;

  // The consumer's side: entries taken from shared_, returned without a lock.
  // Only GetNext and Save (the consumer) touch it.
  std::deque<Entry> ready_;
  std::atomic<int64_t> ready_count_{0};  // ready_.size(), read by the producer
  ElementSource last_source_;            // of the element GetNext returned last

  Mutex mu_;
  CondVar consumer_cv_;                            // an entry arrived, or a pull ended (for Save)
  CondVar producer_cv_;                            // room in the buffer, or resumed
  std::deque<Entry> shared_ ABSL_GUARDED_BY(mu_);  // in input order, after ready_
  std::atomic<int64_t> shared_count_{0};           // shared_.size(), written under mu_
  std::atomic<bool> producer_waiting_{false};
  bool consumer_waiting_ ABSL_GUARDED_BY(mu_) = false;
  bool filled_ ABSL_GUARDED_BY(mu_) = false;    // the producer stopped at a full buffer since the
                                                // consumer last waited
  bool fetching_ ABSL_GUARDED_BY(mu_) = false;  // the producer is inside input_->GetNext
  bool paused_ ABSL_GUARDED_BY(mu_) = false;    // Save in progress
  bool input_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> PrefetchDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (buffer_size_ < 0 && buffer_size_ != kAutotune) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": buffer_size must be >= 0 or AUTOTUNE (-1), got ", buffer_size_));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new PrefetchIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  // tf.data accepts prefetch(0) and removes it as a no-op (grappler's noop_elimination).
  if (buffer_size == 0) return *this;
  return Dataset(std::make_shared<PrefetchDataset>(base(), buffer_size));
}

}  // namespace sluice
