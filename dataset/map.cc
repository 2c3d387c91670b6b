// Map(fn, {num_parallel_calls, deterministic}). Sequential when
// num_parallel_calls is 1; otherwise fn runs on the pipeline's oneTBB arena,
// `parallelism` calls at a time (see ParallelMapIterator).
#include <algorithm>
#include <atomic>
#include <deque>

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

// The consumer of a parallel Map runs a queued call itself only when calls
// take about this long or less: it delays the consumer's cancellation by one
// call.
constexpr int64_t kMaxInlineCallNs = 2'000'000;

class MapDataset : public DatasetBase {
 public:
  MapDataset(std::shared_ptr<const DatasetBase> input, MapFn fn, MapOptions options)
      : DatasetBase("Map", {std::move(input)}), fn_(std::move(fn)), options_(options) {
    DeclareOutputSignature(options_.output_signature);
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    if (options_.num_parallel_calls == 1) return "Map";
    return absl::StrCat("Map(num_parallel_calls=", KnobString(options_.num_parallel_calls), ")");
  }

  const MapFn& fn() const { return fn_; }
  const MapOptions& map_options() const { return options_; }

  // Calls fn on element `index`, naming this node in its errors.
  absl::StatusOr<std::optional<Element>> Apply(const IteratorContext& ctx, Element input,
                                               int64_t index) const {
    ElementContext ec{index, ElementSeed(ctx, position(), index)};
    // Parallel calls run on the pipeline's workers, outside any GetNext.
    absl::StatusOr<Element> out = ExceptionsAsStatus([&] { return fn_(std::move(input), ec); });
    if (!out.ok()) return out.status();
    return std::optional<Element>(std::move(*out));
  }

  // The element that fn made from the input element `source` describes, at the index it gives
  // (the element's seed follows from it): fn must be a function of its input and seed, as
  // Options::checkpoint_sources says.
  absl::StatusOr<Element> Recompute(const IteratorContext& ctx, IteratorBase& input,
                                    SourceCursor& source) const {
    SLUICE_ASSIGN_OR_RETURN(int64_t index, source.NextIn(name(), 0, INT64_MAX));
    SLUICE_ASSIGN_OR_RETURN(Element in, input.Recompute(source));
    return ExceptionsAsStatus([&] {
      return fn_(std::move(in), ElementContext{index, ElementSeed(ctx, position(), index)});
    });
  }

 private:
  MapFn fn_;
  MapOptions options_;
};

class SequentialMapIterator : public IteratorBase {
 public:
  SequentialMapIterator(const MapDataset* d, const IteratorContext& ctx,
                        std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
    if (!in) return std::nullopt;
    const int64_t index = next_index_++;
    auto out = d_->Apply(ctx(), std::move(*in), index);
    if (!out.ok()) return Annotate(out.status(), index);
    return out;
  }
  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    (*state->mutable_ints())["next_index"] = next_index_;
    return SaveInput(input_.get(), state);
  }
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    return RestoreInput(input_.get(), state);
  }
  bool DescribeLastInternal(ElementSource* out) override {
    out->push_back(next_index_ - 1);
    return input_->DescribeLast(out);
  }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    return d_->Recompute(ctx(), *input_, source);
  }

 private:
  const MapDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t next_index_ = 0;
};

// Parallel Map without a thread of its own: the consumer's GetNext pulls inputs
// (keeping up to MapWindow calls queued, running or finished ahead of it:
// twice the parallelism, or more in input order), and oneTBB tasks, at most `parallelism` at a
// time, each take queued inputs one after the other until none is left. A hand-off therefore costs
// a task start only when the workers had run dry, and a wake-up only when the consumer sleeps; a
// consumer that would sleep while a short call is still queued runs it itself (at most
// `parallelism` calls run at once in all). With the former runner thread, one task and three
// wake-ups per element cost ~40 µs, more than a small element's work.
class ParallelMapIterator : public IteratorBase {
 public:
  ParallelMapIterator(const MapDataset* d, const IteratorContext& ctx,
                      std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kAsync),
        input_(std::move(input)),
        shared_(std::make_shared<Shared>()) {
    shared_->dataset = std::static_pointer_cast<const MapDataset>(d->shared_from_this());
    shared_->ctx = ctx;
    shared_->stats = &stats();
    shared_->parallelism = &stats().parallelism;
    deterministic_ = d->map_options().deterministic.value_or(ctx.deterministic());
    // Out of order, a slow call holds back nothing: the window stays 2 x parallelism.
    stats().min_window.store(deterministic_ ? kMinOrderedWindow : 0, std::memory_order_relaxed);
    stats().parallelism.DeclareFromOption(d->map_options().num_parallel_calls,
                                          ctx.runtime->num_threads());
    cancel_token_ = ctx.cancellation->Register([s = shared_] { s->Cancel(); });
  }

  ~ParallelMapIterator() override {
    shared_->Cancel();
    ctx().cancellation->Deregister(cancel_token_);
    // The calls under way finish, as tf.data's destructor waits for them, and no queued one
    // starts: no user function runs, nor touches this node's stats, after the iterator is gone.
    // A worker task not yet started finds the cancellation and leaves without running anything.
    MutexLock l(&shared_->mu);
    while (shared_->running > 0) shared_->idle_cv.Wait(&shared_->mu);
    for (const auto& slot : shared_->results) {
      shared_->Uncount(*slot);
      ReleaseInput(*slot);
    }
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    ReleasableMutexLock l(&shared_->mu);
    while (true) {
      if (shared_->cancelled) return absl::CancelledError("iterator destroyed");
      // Keep the workers fed before taking a result.
      while (!input_ended_ && static_cast<int64_t>(shared_->results.size()) < Bound() &&
             !shared_->cancelled) {
        FetchOne();
      }
      if (shared_->cancelled) return absl::CancelledError("iterator destroyed");
      auto it = Ready();
      if (it != shared_->results.end()) {
        std::shared_ptr<Slot> slot = *it;
        if (IsEndOfSequence(slot->result)) {
          return std::nullopt;  // Keep the end marker: every later call ends too.
        }
        shared_->results.erase(it);
        shared_->Uncount(*slot);
        ReleaseInput(*slot);
        UpdateBuffered();
        l.Release();
        last_source_ = std::move(slot->source);
        if (!slot->result.ok() && slot->from_fn)
          return Annotate(slot->result.status(), slot->index);
        return std::move(slot->result);
      }
      // Rather than sleep until a worker starts (a wake-up of a few µs to
      // many on a busy machine), run a queued call here, within the budget,
      // when calls are short: the consumer's thread (a Prefetch's producer, an
      // Interleave's worker) must stay quick to cancel.
      if (!shared_->queue.empty() && shared_->running < shared_->Parallelism() &&
          shared_->mean_call_ns >= 0 && shared_->mean_call_ns <= kMaxInlineCallNs) {
        // The call counts as busy time; it is not time spent waiting on the workers.
        ExcludeFromOwnTime(shared_->RunQueued());
        continue;
      }
      StartWorkerIfIdle();
      shared_->consumer_waiting = true;
      {
        profiler::Span span("wait", profiler::Active() ? WaitSpanName() : nullptr);
        shared_->consumer_cv.Wait(&shared_->mu);
      }
      shared_->consumer_waiting = false;
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    {
      MutexLock l(&shared_->mu);
      // Quiesce: the workers finish every queued and running call (the consumer,
      // which is us, fetches nothing meanwhile).
      while (!shared_->cancelled && (shared_->running > 0 || !shared_->queue.empty())) {
        StartWorkerIfIdle();
        shared_->consumer_waiting = true;
        shared_->consumer_cv.Wait(&shared_->mu);
        shared_->consumer_waiting = false;
      }
      if (shared_->cancelled) return absl::CancelledError("iterator destroyed");
      (*state->mutable_ints())["next_index"] = next_index_;
      (*state->mutable_ints())["input_ended"] = input_ended_;
      for (const auto& slot : shared_->results) {
        if (!slot->result.ok() && slot->from_fn) {
          ResultToProto(Annotate(slot->result.status(), slot->index), state->add_buffer());
        } else {
          BufferedToProto(slot->result, slot->source, state->add_buffer());
        }
      }
    }
    // The input is saved unlocked: nothing is queued or running, and only the consumer (us)
    // queues calls. A worker task still queued in the pool then takes the lock, finds nothing and
    // frees its thread, which the input's own parallel nodes may need to quiesce: held here, a
    // one-thread pool deadlocked (MapTest.NestedParallelMapsSaveOnAOneThreadPool).
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    // Unlocked while the input restores and the saved sources are recomputed through it, for
    // the reason SaveInternal saves its input unlocked; only the consumer (us) queues calls.
    SLUICE_ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    // The input first: results saved as sources are recomputed through it.
    SLUICE_RETURN_IF_ERROR(RestoreInput(input_.get(), state));
    // Checks that an ended input left its end marker last: without one, GetNext would wait for
    // a call that nothing will start.
    SLUICE_ASSIGN_OR_RETURN(SavedBuffer saved, ReadSavedBuffer(state, *this, this));
    MutexLock l(&shared_->mu);
    input_ended_ = saved.input_ended;
    for (size_t i = 0; i < saved.results.size(); ++i) {
      auto slot = std::make_shared<Slot>();
      slot->done = true;
      slot->result = std::move(saved.results[i]);
      slot->source = std::move(saved.sources[i]);
      shared_->Count(*slot);
      shared_->results.push_back(std::move(slot));
    }
    UpdateBuffered();
    return absl::OkStatus();
  }

  bool DescribeLastInternal(ElementSource* out) override { return AppendSource(last_source_, out); }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    return shared_->dataset->Recompute(ctx(), *input_, source);
  }

 private:
  struct Slot {
    bool done = false;
    bool from_fn = false;  // the result came from fn (its errors get this node's name)
    int64_t index = 0;
    int64_t bytes = 0;  // counted in buffered_bytes once done
    Element input;      // until a worker takes it
    absl::StatusOr<std::optional<Element>> result;
    ElementSource source;  // the result's: its index, then its input's; empty if none
  };

  // What the workers touch; they may outlive the iterator.
  struct Shared {
    Mutex mu;
    CondVar consumer_cv;
    CondVar idle_cv;  // signalled when the last call under way ends after a cancellation
    bool consumer_waiting ABSL_GUARDED_BY(mu) = false;
    // In input order: queued, running or done.
    std::deque<std::shared_ptr<Slot>> results ABSL_GUARDED_BY(mu);
    std::deque<std::shared_ptr<Slot>> queue ABSL_GUARDED_BY(mu);  // not started yet, in order
    int64_t workers ABSL_GUARDED_BY(mu) = 0;  // tasks scheduled and not finished
    int64_t running ABSL_GUARDED_BY(mu) = 0;  // calls of fn under way
    // Of recent calls; -1 before the first ends.
    int64_t mean_call_ns ABSL_GUARDED_BY(mu) = -1;
    // "<node> call", interned on the first call recorded by the profiler.
    std::atomic<const char*> call_span{nullptr};
    bool cancelled ABSL_GUARDED_BY(mu) = false;
    std::shared_ptr<const MapDataset> dataset;
    IteratorContext ctx;
    NodeStats* stats;  // valid while `ctx.stats` (the registry) lives
    Tunable* parallelism;

    void Cancel() {
      MutexLock l(&mu);
      cancelled = true;
      queue.clear();
      consumer_cv.SignalAll();
    }

    int64_t Parallelism() const {
      return std::max<int64_t>(1, parallelism->value.load(std::memory_order_relaxed));
    }

    void Count(Slot& slot) {
      if (slot.result.ok() && slot.result->has_value()) {
        slot.bytes = static_cast<int64_t>(ElementByteSize(**slot.result));
      }
      stats->buffered_bytes.fetch_add(slot.bytes, std::memory_order_relaxed);
    }
    void Uncount(const Slot& slot) {
      if (slot.done) stats->buffered_bytes.fetch_sub(slot.bytes, std::memory_order_relaxed);
    }

    // Runs the oldest queued call, with mu released meanwhile; returns its duration.
    int64_t RunQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      std::shared_ptr<Slot> slot = std::move(queue.front());
      queue.pop_front();
      ++running;
      Element input = std::move(slot->input);
      mu.Unlock();
      stats->active_workers.fetch_add(1, std::memory_order_relaxed);
      const int64_t start = profiler::NowNs();
      absl::StatusOr<std::optional<Element>> out =
          dataset->Apply(ctx, std::move(input), slot->index);
      const int64_t ns = profiler::NowNs() - start;
      if (profiler::Active()) {
        // Each call on the thread that ran it (a worker, or the consumer running one itself).
        const char* span = call_span.load(std::memory_order_relaxed);
        if (span == nullptr) {
          span = profiler::Intern(stats->name + " call");
          call_span.store(span, std::memory_order_relaxed);
        }
        profiler::RecordSpan("map", span, start, start + ns);
      }
      stats->busy_ns.fetch_add(ns, std::memory_order_relaxed);
      stats->active_workers.fetch_sub(1, std::memory_order_relaxed);
      mu.Lock();
      // A moving average (1/8 weight to the newest), so that a slowdown shows soon.
      mean_call_ns = mean_call_ns < 0 ? ns : mean_call_ns + (ns - mean_call_ns) / 8;
      --running;
      if (cancelled && running == 0) idle_cv.SignalAll();
      slot->result = std::move(out);
      slot->done = true;
      // After a cancellation the destructor has already uncounted the buffer.
      if (!cancelled) Count(*slot);
      return ns;
    }

    // A worker task: runs queued calls until the queue is empty, never more
    // calls at once than the parallelism (the consumer may be running one).
    static void Work(const std::shared_ptr<Shared>& s) {
      MutexLock l(&s->mu);
      while (!s->cancelled && !s->queue.empty() && s->running < s->Parallelism()) {
        s->RunQueued();
        // Wake the consumer only when it sleeps (it rechecks what it waits for).
        if (s->consumer_waiting) s->consumer_cv.Signal();
      }
      --s->workers;
    }
  };

  // Calls queued, running or finished ahead of the consumer (MapWindow), sized by the results
  // produced so far.
  int64_t Bound() const {
    const NodeStats& stats = *shared_->stats;
    const int64_t produced = stats.elements_produced.load(std::memory_order_relaxed);
    const double per_result =
        produced > 0 ? static_cast<double>(stats.bytes_produced.load(std::memory_order_relaxed)) /
                           static_cast<double>(produced)
                     : 0;
    return MapWindow(shared_->Parallelism(), stats.min_window.load(std::memory_order_relaxed),
                     per_result);
  }

  // Pulls one input (the lock released meanwhile) and queues its call; an
  // input error or the end takes its place among the results, in order.
  void FetchOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    auto slot = std::make_shared<Slot>();
    shared_->results.push_back(slot);  // Reserves its place while the lock is released.
    shared_->mu.Unlock();
    auto in = input_->GetNext();
    ElementSource source;
    if (in.ok() && in->has_value() && SavesSources()) {
      source.push_back(next_index_);  // the index it gets below: only the consumer changes it
      if (!input_->DescribeLast(&source)) source.clear();
    }
    shared_->mu.Lock();
    if (!in.ok() || !in->has_value()) {
      if (in.ok()) input_ended_ = true;
      slot->result = in.ok() ? absl::StatusOr<std::optional<Element>>(std::nullopt)
                             : absl::StatusOr<std::optional<Element>>(in.status());
      slot->done = true;
      shared_->Count(*slot);
      UpdateBuffered();
      return;
    }
    slot->index = next_index_++;
    slot->source = std::move(source);
    slot->from_fn = true;
    // Taken from the input, not yet handed on (see NodeStats::inputs_held).
    stats().inputs_held.fetch_add(1, std::memory_order_relaxed);
    slot->input = std::move(**in);
    if (shared_->cancelled) return;  // GetNext reports it.
    shared_->queue.push_back(std::move(slot));
    UpdateBuffered();
    StartWorkerIfIdle();
  }

  // A slot leaves the window: its input, if it took one, is no longer held.
  void ReleaseInput(const Slot& slot) {
    if (slot.from_fn) stats().inputs_held.fetch_sub(1, std::memory_order_relaxed);
  }

  // Starts a worker task when calls are queued and fewer workers than the
  // parallelism exist; on mu. A worker leaves when the budget is full (the
  // consumer was running a call), so the consumer calls this before it sleeps.
  void StartWorkerIfIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    if (shared_->cancelled || shared_->queue.empty() || shared_->workers >= shared_->Parallelism())
      return;
    ++shared_->workers;
    ctx().runtime->Schedule([sp = shared_] { Shared::Work(sp); });
  }

  // The result to return now, or results.end(): in order when deterministic;
  // otherwise any finished one, but the end only after every element before it.
  std::deque<std::shared_ptr<Slot>>::iterator Ready() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    auto& results = shared_->results;
    if (results.empty()) return results.end();
    if (deterministic_) return results.front()->done ? results.begin() : results.end();
    for (auto it = results.begin(); it != results.end(); ++it) {
      if (!(*it)->done) continue;
      const bool end = IsEndOfSequence((*it)->result);
      if (!end || it == results.begin()) return it;
    }
    return results.end();
  }

  void UpdateBuffered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    stats().buffered_elements.store(static_cast<int64_t>(shared_->results.size()),
                                    std::memory_order_relaxed);
  }

  std::unique_ptr<IteratorBase> input_;
  std::shared_ptr<Shared> shared_;
  bool deterministic_ = true;
  bool input_ended_ = false;  // the consumer's, like next_index_
  int64_t next_index_ = 0;
  int64_t cancel_token_ = -1;
  ElementSource last_source_;  // of the element GetNext returned last
};

absl::StatusOr<std::unique_ptr<IteratorBase>> MapDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  if (options_.num_parallel_calls == 1) {
    return std::unique_ptr<IteratorBase>(new SequentialMapIterator(this, ctx, std::move(input)));
  }
  SLUICE_RETURN_IF_ERROR(CheckKnob(name(), "num_parallel_calls", options_.num_parallel_calls));
  return std::unique_ptr<IteratorBase>(new ParallelMapIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Map(MapFn fn, MapOptions options) const {
  return Dataset(std::make_shared<MapDataset>(base(), std::move(fn), options));
}

Dataset Dataset::Map(SimpleMapFn fn, MapOptions options) const {
  return Map(
      MapFn([fn = std::move(fn)](Element e, const ElementContext&) { return fn(std::move(e)); }),
      options);
}

}  // namespace sluice
