// Map(fn, {num_parallel_calls, deterministic}). Sequential when
// num_parallel_calls is 1; otherwise a runner thread pulls inputs in order and
// schedules fn calls on the pipeline's oneTBB arena, keeping at most
// `parallelism` calls in flight and results buffered.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class MapDataset : public DatasetBase {
 public:
  MapDataset(std::shared_ptr<const DatasetBase> input, MapFn fn, MapOptions options)
      : DatasetBase("Map", {std::move(input)}), fn_(std::move(fn)), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    if (options_.num_parallel_calls == 1) return "Map";
    return absl::StrCat("Map(num_parallel_calls=",
                        options_.num_parallel_calls == kAutotune
                            ? std::string("autotune")
                            : absl::StrCat(options_.num_parallel_calls),
                        ")");
  }

  const MapFn& fn() const { return fn_; }
  const MapOptions& map_options() const { return options_; }

  // Calls fn on element `index`, naming this node in its errors.
  absl::StatusOr<std::optional<Element>> Apply(const IteratorContext& ctx, Element input,
                                               int64_t index) const {
    ElementContext ec{index, ElementSeed(ctx, position(), index)};
    absl::StatusOr<Element> out = fn_(std::move(input), ec);
    if (!out.ok()) return out.status();
    return std::optional<Element>(std::move(*out));
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
    ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
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
    ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    return in ? input_->Restore(*in) : absl::OkStatus();
  }

 private:
  const MapDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t next_index_ = 0;
};

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
    deterministic_ = d->map_options().deterministic.value_or(ctx.deterministic());
    Tunable& p = stats().parallelism;
    const int requested = d->map_options().num_parallel_calls;
    p.present = true;
    p.autotune = requested == kAutotune;
    p.min = 1;
    p.max = p.autotune ? ctx.runtime->num_threads() : requested;
    if (p.value.load() == 0) p.value = p.max.load();  // Shared by a node's iterators.
    cancel_token_ = ctx.cancellation->Register([s = shared_] {
      std::lock_guard<std::mutex> l(s->mu);
      s->cancelled = true;
      s->cv.notify_all();
    });
  }

  ~ParallelMapIterator() override {
    {
      std::lock_guard<std::mutex> l(shared_->mu);
      shared_->cancelled = true;
      shared_->cv.notify_all();
    }
    if (runner_.joinable()) runner_.join();
    ctx().cancellation->Deregister(cancel_token_);
    // Calls still in flight hold `shared_` and the dataset; they finish on
    // their own and their results are dropped.
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    std::unique_lock<std::mutex> l(shared_->mu);
    if (!runner_.joinable()) runner_ = std::thread([this] { RunnerLoop(); });
    std::shared_ptr<Slot> slot;
    shared_->cv.wait(l, [&] {
      if (shared_->cancelled) return true;
      if (shared_->results.empty()) return false;
      if (deterministic_) return shared_->results.front()->done;
      for (const auto& s : shared_->results) {
        // The end of the input is returned only after every element before it.
        if (s->done && (s->result.ok() && !s->result->has_value())) {
          return s == shared_->results.front();
        }
        if (s->done) return true;
      }
      return false;
    });
    if (shared_->cancelled) return absl::CancelledError("iterator destroyed");
    auto it = shared_->results.begin();
    if (!deterministic_) {
      while (!(*it)->done) ++it;
    }
    slot = *it;
    if (slot->result.ok() && !slot->result->has_value()) {
      return std::nullopt;  // Keep the end marker: every later call ends too.
    }
    shared_->results.erase(it);
    UpdateBuffered();
    shared_->cv.notify_all();
    return std::move(slot->result);
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    std::unique_lock<std::mutex> l(shared_->mu);
    // Quiesce: no new fetches, wait for the runner and every call in flight.
    shared_->paused = true;
    shared_->cv.notify_all();
    shared_->cv.wait(
        l, [&] { return shared_->cancelled || (!shared_->fetching && shared_->in_flight == 0); });
    absl::Status s =
        shared_->cancelled ? absl::CancelledError("iterator destroyed") : SaveLocked(state);
    shared_->paused = false;
    shared_->cv.notify_all();
    return s;
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    std::lock_guard<std::mutex> l(shared_->mu);
    ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "input_ended"));
    input_ended_ = ended != 0;
    for (const proto::BufferedResult& r : state.buffer()) {
      ASSIGN_OR_RETURN(auto result, ResultFromProto(r));
      auto slot = std::make_shared<Slot>();
      slot->done = true;
      slot->result = std::move(result);
      shared_->results.push_back(std::move(slot));
    }
    UpdateBuffered();
    ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    return in ? input_->Restore(*in) : absl::OkStatus();
  }

 private:
  struct Slot {
    bool done = false;
    absl::StatusOr<std::optional<Element>> result;
  };
  // What in-flight calls touch; they may outlive the iterator.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Slot>> results;  // in input order
    int64_t in_flight = 0;
    bool fetching = false;
    bool paused = false;
    bool cancelled = false;
    std::shared_ptr<const MapDataset> dataset;
    IteratorContext ctx;
    NodeStats* stats;  // valid while `dataset` lives: the registry outlives calls
  };

  absl::Status SaveLocked(proto::IteratorStateProto* state) {
    (*state->mutable_ints())["next_index"] = next_index_;
    (*state->mutable_ints())["input_ended"] = input_ended_;
    for (const auto& slot : shared_->results) ResultToProto(slot->result, state->add_buffer());
    return SaveInput(input_.get(), state);
  }

  void UpdateBuffered() {
    stats().buffered_elements.store(static_cast<int64_t>(shared_->results.size()),
                                    std::memory_order_relaxed);
  }

  int64_t Parallelism() const {
    return std::max<int64_t>(1, stats_parallelism_->value.load(std::memory_order_relaxed));
  }

  void RunnerLoop() {
    std::unique_lock<std::mutex> l(shared_->mu);
    while (true) {
      shared_->cv.wait(l, [&] {
        return shared_->cancelled ||
               (!shared_->paused && !input_ended_ && shared_->in_flight < Parallelism() &&
                static_cast<int64_t>(shared_->results.size()) < Parallelism());
      });
      if (shared_->cancelled) return;
      shared_->fetching = true;
      l.unlock();
      auto in = input_->GetNext();
      l.lock();
      shared_->fetching = false;
      auto slot = std::make_shared<Slot>();
      shared_->results.push_back(slot);
      UpdateBuffered();
      if (!in.ok() || !in->has_value()) {
        // An input error takes its place in order; the end stops fetching.
        slot->done = true;
        slot->result = in.ok() ? absl::StatusOr<std::optional<Element>>(std::nullopt)
                               : absl::StatusOr<std::optional<Element>>(in.status());
        if (in.ok()) input_ended_ = true;
        shared_->cv.notify_all();
        continue;
      }
      const int64_t index = next_index_++;
      ++shared_->in_flight;
      shared_->stats->active_workers.fetch_add(1, std::memory_order_relaxed);
      ctx().runtime->Schedule(
          [s = shared_, slot, element = std::move(**in), index, self = this]() mutable {
            absl::StatusOr<std::optional<Element>> out;
            {
              ScopedTimer t(&s->stats->busy_ns);
              out = s->dataset->Apply(s->ctx, std::move(element), index);
            }
            s->stats->active_workers.fetch_sub(1, std::memory_order_relaxed);
            std::lock_guard<std::mutex> l(s->mu);
            if (!out.ok() && !s->cancelled) out = self->Annotate(out.status(), index);
            slot->result = std::move(out);
            slot->done = true;
            --s->in_flight;
            s->cv.notify_all();
          });
    }
  }

  std::unique_ptr<IteratorBase> input_;
  std::shared_ptr<Shared> shared_;
  Tunable* stats_parallelism_ = &stats().parallelism;
  bool deterministic_ = true;
  bool input_ended_ = false;  // guarded by shared_->mu
  int64_t next_index_ = 0;    // owned by the runner (or Save/Restore while it is idle)
  int64_t cancel_token_ = -1;
  std::thread runner_;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> MapDataset::MakeIterator(
    const IteratorContext& ctx) const {
  ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  if (options_.num_parallel_calls == 1) {
    return std::unique_ptr<IteratorBase>(new SequentialMapIterator(this, ctx, std::move(input)));
  }
  if (options_.num_parallel_calls < 1 && options_.num_parallel_calls != kAutotune) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": num_parallel_calls must be >= 1 or kAutotune, got ",
                     options_.num_parallel_calls));
  }
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
