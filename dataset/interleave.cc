// Interleave(fn, {cycle_length, block_length, num_parallel_calls,
// deterministic}): keeps a cycle of `cycle_length` inner iterators, each made
// by fn from one input element, and takes `block_length` elements from each in
// turn; an exhausted one is replaced, in its slot, by the next input element.
// This is tf.data's order, and errors do not move the position (the next call
// reads the same inner iterator again).
//
// num_parallel_calls == 1 runs that loop in the caller. Otherwise worker
// std::threads (inner GetNext may block, so not oneTBB tasks) open the next
// input elements ahead of time ("futures", in input order) and prefetch from
// the open inner iterators into bounded per-slot buffers; the consumer walks
// the same cycle over those buffers, so deterministic mode yields exactly the
// sequential order, while deterministic=false takes whatever is ready.
//
// Inner iterator i is made with ctx.ForInner(name(), i). A checkpoint holds the input
// iterator, the cycle position, and for each open slot (and future) the input
// element that created it, its inner iterator's state and its buffered
// results; restore calls fn on the saved element again.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

using Result = absl::StatusOr<std::optional<Element>>;

// Results buffered per slot in parallel mode: a block at a time, at least two
// so a worker reads the next element while the consumer takes one, and at
// most 16 so that large elements (decoded images) stay bounded.
int64_t SlotBufferCapacity(int64_t block_length) {
  return std::clamp<int64_t>(block_length, 2, 16);
}

std::string Knob(int value) {
  return value == kAutotune ? std::string("autotune") : absl::StrCat(value);
}

class InterleaveDataset : public DatasetBase {
 public:
  InterleaveDataset(std::shared_ptr<const DatasetBase> input, DatasetFn fn,
                    InterleaveOptions options)
      : DatasetBase("Interleave", {std::move(input)}), fn_(std::move(fn)), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override {
    return inputs()[0]->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  std::string Describe() const override {
    std::string s = absl::StrCat("Interleave(cycle_length=", Knob(options_.cycle_length),
                                 ", block_length=", options_.block_length);
    if (options_.num_parallel_calls != 1) {
      absl::StrAppend(&s, ", num_parallel_calls=", Knob(options_.num_parallel_calls));
    }
    return s + ")";
  }

  const InterleaveOptions& interleave_options() const { return options_; }

  // The iterator of fn(element), the `index`-th input element, beside the
  // dataset it reads (an iterator does not own its dataset).
  // Thread-safe: parallel workers open inner pipelines concurrently.
  absl::Status MakeInner(const IteratorContext& ctx, Element element, int64_t index,
                         std::shared_ptr<const DatasetBase>* dataset,
                         std::unique_ptr<IteratorBase>* iterator) const {
    ASSIGN_OR_RETURN(Dataset inner, fn_(std::move(element)));
    {
      // Iterator constructors set their node's shared Tunables without
      // atomics; two inner pipelines of this node share those nodes.
      std::lock_guard<std::mutex> l(make_mu_);
      ASSIGN_OR_RETURN(*iterator, inner.base()->MakeIterator(
                                      ctx.ForInner(name(), static_cast<uint64_t>(index))));
    }
    *dataset = inner.base();
    return absl::OkStatus();
  }

 private:
  DatasetFn fn_;
  InterleaveOptions options_;
  mutable std::mutex make_mu_;
};

// One inner pipeline: the input element that made it (kept for checkpoints),
// its dataset and iterator, and in parallel mode its buffered results.
struct InnerPipeline {
  int64_t index = -1;  // of its input element; also its salt
  Element input;
  std::shared_ptr<const DatasetBase> dataset;  // declared first: outlives `iterator`
  std::unique_ptr<IteratorBase> iterator;      // null once ended, or when making it failed
  std::deque<Result> buffer;
  bool opening = false;  // a worker is making its iterator (a future only)
  bool busy = false;     // a worker is opening it or in its GetNext
  bool ended = false;    // its end is in `buffer` (or was taken from it)
  bool failed = false;   // a future whose making failed: `buffer` holds the error
};

using Futures = std::deque<std::unique_ptr<InnerPipeline>>;

// The cycle position and checkpoint format shared by both modes.
class InterleaveIterator : public IteratorBase {
 public:
  InterleaveIterator(const InterleaveDataset* d, const IteratorContext& ctx,
                     std::unique_ptr<IteratorBase> input, NodeKind kind)
      : IteratorBase(d, ctx, kind), d_(d), input_(std::move(input)) {
    const int requested = d->interleave_options().cycle_length;
    Tunable& c = stats().cycle_length;
    c.present = true;
    c.autotune = requested == kAutotune;
    c.min = 1;
    c.max = c.autotune ? std::max(1, ctx.runtime->num_threads()) : requested;
    if (c.value.load() == 0) c.value = c.max.load();  // Shared by a node's iterators.
    // Read once per iterator: changing it mid-stream would change the order.
    // A later iterator of this node (the next epoch) picks up a new value.
    cycle_length_ = std::max<int64_t>(1, c.value.load());
    block_length_ = d->interleave_options().block_length;
    cycle_.resize(static_cast<size_t>(cycle_length_));
  }

 protected:
  void AdvanceToNextInCycle() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % cycle_length_;
  }
  void AdvancePosition() {
    if (++block_index_ == block_length_) AdvanceToNextInCycle();
  }

  absl::Status SaveState(proto::IteratorStateProto* state, const Futures& futures) {
    auto& ints = *state->mutable_ints();
    ints["cycle_length"] = cycle_length_;
    ints["cycle_index"] = cycle_index_;
    ints["block_index"] = block_index_;
    ints["num_open"] = num_open_;
    ints["next_index"] = next_index_;
    ints["end_of_input"] = end_of_input_;
    ints["input_ended"] = input_ended_;
    ints["num_futures"] = static_cast<int64_t>(futures.size());
    RETURN_IF_ERROR(SaveInput(input_.get(), state));
    for (const auto& slot : cycle_) {
      state->add_input_present(slot != nullptr);
      proto::IteratorStateProto* out = state->add_inputs();
      if (slot != nullptr) RETURN_IF_ERROR(SaveInner(*slot, out));
    }
    for (const auto& future : futures) {
      state->add_input_present(true);
      RETURN_IF_ERROR(SaveInner(*future, state->add_inputs()));
    }
    return absl::OkStatus();
  }

  // Inner iterators are remade in `inner_ctx` (salted per input element).
  absl::Status RestoreState(const proto::IteratorStateProto& state,
                            const IteratorContext& inner_ctx, Futures* futures) {
    ASSIGN_OR_RETURN(cycle_length_, SavedInt(state, "cycle_length"));
    ASSIGN_OR_RETURN(cycle_index_, SavedInt(state, "cycle_index"));
    ASSIGN_OR_RETURN(block_index_, SavedInt(state, "block_index"));
    ASSIGN_OR_RETURN(num_open_, SavedInt(state, "num_open"));
    ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    ASSIGN_OR_RETURN(int64_t end_of_input, SavedInt(state, "end_of_input"));
    ASSIGN_OR_RETURN(int64_t input_ended, SavedInt(state, "input_ended"));
    ASSIGN_OR_RETURN(int64_t num_futures, SavedInt(state, "num_futures"));
    end_of_input_ = end_of_input != 0;
    input_ended_ = input_ended != 0;
    if (cycle_length_ < 1 || cycle_index_ < 0 || cycle_index_ >= cycle_length_ || num_futures < 0 ||
        (num_futures > 0 && futures == nullptr) ||
        state.inputs_size() != 1 + cycle_length_ + num_futures) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", state.node(), " has an inconsistent cycle"));
    }
    ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    if (in != nullptr) RETURN_IF_ERROR(input_->Restore(*in));
    cycle_.clear();
    cycle_.resize(static_cast<size_t>(cycle_length_));
    for (int64_t s = 0; s < cycle_length_; ++s) {
      ASSIGN_OR_RETURN(const proto::IteratorStateProto* slot,
                       InputState(state, static_cast<int>(1 + s)));
      if (slot != nullptr) {
        ASSIGN_OR_RETURN(cycle_[s], RestoreInner(*slot, inner_ctx));
      }
    }
    for (int64_t f = 0; f < num_futures; ++f) {
      ASSIGN_OR_RETURN(const proto::IteratorStateProto* future,
                       InputState(state, static_cast<int>(1 + cycle_length_ + f)));
      if (future == nullptr) return absl::DataLossError("interleave checkpoint lacks a future");
      ASSIGN_OR_RETURN(std::unique_ptr<InnerPipeline> inner, RestoreInner(*future, inner_ctx));
      futures->push_back(std::move(inner));
    }
    return absl::OkStatus();
  }

  const InterleaveDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t cycle_length_ = 1;
  int64_t block_length_ = 1;
  std::vector<std::unique_ptr<InnerPipeline>> cycle_;  // null: an empty slot
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int64_t num_open_ = 0;
  int64_t next_index_ = 0;     // index of the next input element
  bool end_of_input_ = false;  // the cycle has seen the end of the input
  bool input_ended_ = false;   // the input returned its end (parallel: maybe earlier)

 private:
  absl::Status SaveInner(const InnerPipeline& inner, proto::IteratorStateProto* out) {
    out->set_node(absl::StrCat(dataset()->name(), " slot"));
    auto& ints = *out->mutable_ints();
    ints["index"] = inner.index;
    ints["ended"] = inner.ended;
    ints["failed"] = inner.failed;
    if (inner.iterator != nullptr) {
      proto::ElementProto element;
      ElementToProto(inner.input, &element);
      (*out->mutable_blobs())["input_element"] = element.SerializeAsString();
    }
    for (const Result& r : inner.buffer) ResultToProto(r, out->add_buffer());
    return SaveInput(inner.iterator.get(), out);
  }

  absl::StatusOr<std::unique_ptr<InnerPipeline>> RestoreInner(const proto::IteratorStateProto& p,
                                                              const IteratorContext& inner_ctx) {
    auto inner = std::make_unique<InnerPipeline>();
    ASSIGN_OR_RETURN(inner->index, SavedInt(p, "index"));
    ASSIGN_OR_RETURN(int64_t ended, SavedInt(p, "ended"));
    ASSIGN_OR_RETURN(int64_t failed, SavedInt(p, "failed"));
    inner->ended = ended != 0;
    inner->failed = failed != 0;
    for (const proto::BufferedResult& b : p.buffer()) {
      ASSIGN_OR_RETURN(Result r, ResultFromProto(b));
      inner->buffer.push_back(std::move(r));
    }
    ASSIGN_OR_RETURN(const proto::IteratorStateProto* it_state, InputState(p, 0));
    if (it_state == nullptr) return inner;
    auto blob = p.blobs().find("input_element");
    proto::ElementProto element;
    if (blob == p.blobs().end() || !element.ParseFromString(blob->second)) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", p.node(), " lacks the input element of its slot"));
    }
    ASSIGN_OR_RETURN(inner->input, ElementFromProto(element));
    absl::Status made =
        d_->MakeInner(inner_ctx, inner->input, inner->index, &inner->dataset, &inner->iterator);
    if (!made.ok()) return Annotate(made, inner->index);
    RETURN_IF_ERROR(inner->iterator->Restore(*it_state));
    return inner;
  }
};

class SequentialInterleaveIterator : public InterleaveIterator {
 public:
  SequentialInterleaveIterator(const InterleaveDataset* d, const IteratorContext& ctx,
                               std::unique_ptr<IteratorBase> input)
      : InterleaveIterator(d, ctx, std::move(input), NodeKind::kInterleave) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    // As for the parallel workers, busy time is all the work the node drives
    // (input, opening, inner reads): what its parallelism would scale.
    ScopedTimer t(&stats().busy_ns);
    return NextInCycle();
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    return SaveState(state, Futures());
  }
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    return RestoreState(state, ctx(), nullptr);
  }

 private:
  // tf.data's InterleaveDatasetOp loop.
  absl::StatusOr<std::optional<Element>> NextInCycle() {
    while (!end_of_input_ || num_open_ > 0) {
      InnerPipeline* current = cycle_[cycle_index_].get();
      if (current != nullptr) {
        ASSIGN_OR_RETURN(std::optional<Element> e, current->iterator->GetNext());
        if (e) {
          AdvancePosition();
          return e;
        }
        cycle_[cycle_index_].reset();
        --num_open_;
        AdvanceToNextInCycle();
      } else if (!end_of_input_) {
        ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
        if (!in) {
          end_of_input_ = input_ended_ = true;
          continue;
        }
        auto inner = std::make_unique<InnerPipeline>();
        inner->index = next_index_++;
        absl::Status made =
            d_->MakeInner(ctx(), *in, inner->index, &inner->dataset, &inner->iterator);
        if (!made.ok()) return Annotate(made, inner->index);
        inner->input = std::move(*in);
        cycle_[cycle_index_] = std::move(inner);
        ++num_open_;
      } else {
        AdvanceToNextInCycle();
      }
    }
    return std::nullopt;
  }
};

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
    p.present = true;
    p.autotune = requested == kAutotune;
    p.min = 1;
    p.max = p.autotune ? cycle_length_ : requested;
    if (p.value.load() == 0) p.value = p.max.load();
    num_workers_ = p.max;
    buffer_capacity_ = SlotBufferCapacity(block_length_);
    future_limit_ = cycle_length_;
    // Inner pipelines get a cancellation of their own, so that destroying this
    // iterator wakes their blocked waits even when the pipeline goes on.
    inner_ctx_ = ctx;
    inner_ctx_.cancellation = inner_cancel_;
    cancel_token_ = ctx.cancellation->Register([s = signal_, inner = inner_cancel_] {
      {
        std::lock_guard<std::mutex> l(s->mu);
        s->cancelled = true;
        s->cv.notify_all();
      }
      inner->Cancel();
    });
  }

  ~ParallelInterleaveIterator() override {
    {
      std::lock_guard<std::mutex> l(signal_->mu);
      signal_->cancelled = true;
      signal_->cv.notify_all();
    }
    inner_cancel_->Cancel();
    for (std::thread& w : workers_) w.join();
    ctx().cancellation->Deregister(cancel_token_);
    // The inner iterators go with the members, now that no worker uses them.
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    std::unique_lock<std::mutex> l(signal_->mu);
    if (workers_.empty()) {
      for (int64_t i = 0; i < num_workers_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
    }
    while (true) {
      if (signal_->cancelled) return absl::CancelledError("iterator destroyed");
      Result out;
      const Step step = deterministic_ ? StepInOrder(&out) : StepAny(&out);
      if (step != Step::kWait) signal_->cv.notify_all();  // Room in a buffer, or a slot closed.
      if (step == Step::kReturn) return out;
      if (step == Step::kWait) signal_->cv.wait(l);
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    std::unique_lock<std::mutex> l(signal_->mu);
    // Quiesce: no new jobs; wait for the workers' current ones.
    paused_ = true;
    signal_->cv.notify_all();
    signal_->cv.wait(l, [&] { return signal_->cancelled || active_ == 0; });
    absl::Status s = signal_->cancelled ? absl::CancelledError("iterator destroyed")
                                        : SaveState(state, futures_);
    paused_ = false;
    signal_->cv.notify_all();
    return s;
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    std::lock_guard<std::mutex> l(signal_->mu);
    RETURN_IF_ERROR(RestoreState(state, inner_ctx_, &futures_));
    buffered_elements_ = buffered_bytes_ = 0;
    for (const auto& slot : cycle_) {
      if (slot != nullptr) CountBuffered(*slot, +1);
    }
    for (const auto& future : futures_) CountBuffered(*future, +1);
    return absl::OkStatus();
  }

 private:
  // What the cancellation callback touches; it may run while we are destroyed.
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool cancelled = false;
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

  // The consumer's step in tf.data's order (the sequential loop, reading
  // buffers instead of inner iterators).
  Step StepInOrder(Result* out) {
    if (end_of_input_ && num_open_ == 0) {
      *out = std::nullopt;
      return Step::kReturn;
    }
    InnerPipeline* current = cycle_[cycle_index_].get();
    if (current != nullptr) {
      if (current->buffer.empty()) return Step::kWait;
      Result r = Pop(current);
      if (r.ok() && !r->has_value()) {
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
  Step StepAny(Result* out) {
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
      if (r.ok() && !r->has_value()) {
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
  Step InstallFuture(int64_t slot, Result* out) {
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

  Result Pop(InnerPipeline* inner) {
    Result r = std::move(inner->buffer.front());
    inner->buffer.pop_front();
    CountResult(r, -1);
    return r;
  }

  // Only ended slots close, so no worker is using the pipeline.
  void CloseSlot(int64_t s) {
    CountBuffered(*cycle_[s], -1);
    cycle_[s].reset();
    --num_open_;
  }

  void CountResult(const Result& r, int sign) {
    buffered_elements_ += sign;
    if (r.ok() && r->has_value()) {
      buffered_bytes_ += sign * static_cast<int64_t>(ElementByteSize(**r));
    }
    stats().buffered_elements.store(buffered_elements_, std::memory_order_relaxed);
    stats().buffered_bytes.store(buffered_bytes_, std::memory_order_relaxed);
  }
  void CountBuffered(const InnerPipeline& inner, int sign) {
    for (const Result& r : inner.buffer) CountResult(r, sign);
  }

  bool Runnable(const InnerPipeline* inner) const {
    return inner->iterator != nullptr && !inner->busy && !inner->ended &&
           static_cast<int64_t>(inner->buffer.size()) < buffer_capacity_;
  }

  // The most urgent work: opening the next input element when the cycle has
  // a hole, then the cycle's slots from the consumer's position on, then
  // opening ahead, then reading ahead in the futures.
  Job FindJob() {
    if (paused_ || active_ >= Parallelism()) return {};
    const bool input_wanted =
        !input_busy_ && !input_ended_ && static_cast<int64_t>(futures_.size()) < future_limit_;
    if (input_wanted && futures_.empty() && num_open_ < cycle_length_) {
      return {JobKind::kInput, nullptr};
    }
    for (int64_t k = 0; k < cycle_length_; ++k) {
      InnerPipeline* slot = cycle_[(cycle_index_ + k) % cycle_length_].get();
      if (slot != nullptr && Runnable(slot)) return {JobKind::kInner, slot};
    }
    if (input_wanted) return {JobKind::kInput, nullptr};
    for (const auto& future : futures_) {
      if (Runnable(future.get())) return {JobKind::kInner, future.get()};
    }
    return {};
  }

  void WorkerLoop() {
    std::unique_lock<std::mutex> l(signal_->mu);
    while (true) {
      Job job;
      signal_->cv.wait(l, [&] {
        if (signal_->cancelled) return true;
        job = FindJob();
        return job.kind != JobKind::kNone;
      });
      if (signal_->cancelled) return;
      ++active_;
      stats().active_workers.fetch_add(1, std::memory_order_relaxed);
      if (job.kind == JobKind::kInput) {
        OpenNextInput(l);
      } else {
        ReadAhead(l, job.inner);
      }
      --active_;
      stats().active_workers.fetch_sub(1, std::memory_order_relaxed);
      signal_->cv.notify_all();
    }
  }

  // Reads the next input element and makes its pipeline, appended to the
  // futures in input order. The pipeline is made without the lock (fn may
  // open a file), and the input is free for the next worker meanwhile.
  void OpenNextInput(std::unique_lock<std::mutex>& l) {
    input_busy_ = true;
    l.unlock();
    Result in;
    {
      ScopedTimer t(&stats().busy_ns);
      in = input_->GetNext();
    }
    l.lock();
    input_busy_ = false;
    if (in.ok() && !in->has_value()) {
      input_ended_ = true;
      return;
    }
    auto entry = std::make_unique<InnerPipeline>();
    InnerPipeline* future = entry.get();
    if (!in.ok()) {  // Named by the input; takes its place in order.
      future->failed = true;
      future->buffer.push_back(in.status());
      CountResult(future->buffer.back(), +1);
      futures_.push_back(std::move(entry));
      return;
    }
    future->index = next_index_++;
    future->input = std::move(**in);
    future->busy = future->opening = true;
    futures_.push_back(std::move(entry));
    l.unlock();
    std::shared_ptr<const DatasetBase> dataset;
    std::unique_ptr<IteratorBase> iterator;
    absl::Status made;
    {
      ScopedTimer t(&stats().busy_ns);
      made = d_->MakeInner(inner_ctx_, future->input, future->index, &dataset, &iterator);
    }
    if (!made.ok()) made = Annotate(made, future->index);
    l.lock();
    future->busy = future->opening = false;
    if (made.ok()) {
      future->dataset = std::move(dataset);
      future->iterator = std::move(iterator);
    } else {
      future->failed = true;
      future->buffer.push_back(made);
      CountResult(future->buffer.back(), +1);
    }
  }

  // One GetNext on an inner iterator, into its buffer.
  void ReadAhead(std::unique_lock<std::mutex>& l, InnerPipeline* inner) {
    inner->busy = true;
    l.unlock();
    Result r;
    {
      ScopedTimer t(&stats().busy_ns);
      r = inner->iterator->GetNext();
    }
    l.lock();
    inner->busy = false;
    std::unique_ptr<IteratorBase> finished;
    std::shared_ptr<const DatasetBase> finished_dataset;
    if (r.ok() && !r->has_value()) {
      inner->ended = true;
      finished = std::move(inner->iterator);
      finished_dataset = std::move(inner->dataset);
    }
    inner->buffer.push_back(std::move(r));
    CountResult(inner->buffer.back(), +1);
    if (finished != nullptr) {
      // Destroyed without the lock: its destructor may wait on its threads.
      l.unlock();
      finished.reset();
      finished_dataset.reset();
      l.lock();
    }
  }

  std::shared_ptr<Signal> signal_;
  std::shared_ptr<CancellationManager> inner_cancel_;
  IteratorContext inner_ctx_;
  Tunable* parallelism_ = &stats().parallelism;
  bool deterministic_ = true;
  int64_t num_workers_ = 1;
  int64_t buffer_capacity_ = 2;
  int64_t future_limit_ = 1;
  int64_t cancel_token_ = -1;
  // Guarded by signal_->mu, with the cycle state of the base class.
  Futures futures_;
  bool input_busy_ = false;
  bool paused_ = false;
  int64_t active_ = 0;
  int64_t buffered_elements_ = 0;
  int64_t buffered_bytes_ = 0;
  std::vector<std::thread> workers_;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> InterleaveDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (options_.cycle_length < 1 && options_.cycle_length != kAutotune) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": cycle_length must be >= 1 or kAutotune, got ", options_.cycle_length));
  }
  if (options_.block_length < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": block_length must be >= 1, got ", options_.block_length));
  }
  if (options_.num_parallel_calls < 1 && options_.num_parallel_calls != kAutotune) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": num_parallel_calls must be >= 1 or kAutotune, got ",
                     options_.num_parallel_calls));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  if (options_.num_parallel_calls == 1) {
    return std::unique_ptr<IteratorBase>(
        new SequentialInterleaveIterator(this, ctx, std::move(input)));
  }
  return std::unique_ptr<IteratorBase>(new ParallelInterleaveIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Interleave(DatasetFn fn, InterleaveOptions options) const {
  return Dataset(std::make_shared<InterleaveDataset>(base(), std::move(fn), options));
}

Dataset Dataset::Interleave(std::function<Dataset(const std::string&)> fn,
                            InterleaveOptions options) const {
  DatasetFn by_element = [fn = std::move(fn)](Element e) -> absl::StatusOr<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kBytes || e[0].num_elements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("Interleave by name expects a scalar bytes element (a file name), got ",
                       ElementDebugString(e)));
    }
    return fn(e[0].flat<std::string>()[0]);
  };
  return Interleave(std::move(by_element), options);
}

}  // namespace sluice
