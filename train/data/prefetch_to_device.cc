#include "train/data/prefetch_to_device.h"

#include <pthread.h>

#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/buffered_entry.h"
#include "dataset/dataset_base.h"
#include "train/backend/backend.h"
#include "train/backend/transfer.h"

namespace sluice::train::data {
namespace {

using Result = absl::StatusOr<std::optional<Element>>;

// Waits for every copy, keeping the first error: before device memory a copy writes into, or
// staging memory it reads from, may be freed.
absl::Status SynchronizeAll(const std::vector<std::shared_ptr<backend::Event>>& events) {
  absl::Status status;
  for (const auto& e : events) status.Update(e->Synchronize());
  return status;
}

// Staging tensors, reused once their copy is done. Only the producer thread uses it.
class StagingPool {
 public:
  explicit StagingPool(size_t capacity) : capacity_(capacity) {}
  ~StagingPool() {
    for (Staged& s : free_) s.copy->Synchronize().IgnoreError();
  }

  // A staging tensor of this dtype and shape that no copy reads any more.
  absl::StatusOr<Tensor> Take(backend::Backend& backend, DType dtype, const Shape& shape) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->tensor.dtype() != dtype || !(it->tensor.shape() == shape)) continue;
      SLUICE_RETURN_IF_ERROR(it->copy->Synchronize());  // the oldest: normally done already
      Tensor t = std::move(it->tensor);
      free_.erase(it);
      return t;
    }
    return backend.AllocateStaging(dtype, shape);
  }
  // Returns `t`, which `copy` reads until it is done.
  absl::Status Give(Tensor t, std::shared_ptr<backend::Event> copy) {
    free_.push_back({std::move(t), std::move(copy)});
    if (free_.size() <= capacity_) return absl::OkStatus();
    absl::Status s = free_.front().copy->Synchronize();
    free_.pop_front();
    return s;
  }

 private:
  struct Staged {
    Tensor tensor;
    std::shared_ptr<backend::Event> copy;
  };

  const size_t capacity_;
  std::deque<Staged> free_;
};

class PrefetchToDeviceDataset : public DatasetBase {
 public:
  PrefetchToDeviceDataset(std::shared_ptr<const DatasetBase> input, Device device,
                          int64_t buffer_size)
      : DatasetBase("PrefetchToDevice", {std::move(input)}),
        device_(device),
        buffer_size_(buffer_size) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    return absl::StrCat("PrefetchToDevice(", device_.DebugString(), ", ", buffer_size_, ")");
  }

  std::optional<Device> MovesElementsTo() const override { return device_; }
  const Device& device() const { return device_; }
  int64_t buffer_size() const { return buffer_size_; }

 private:
  Device device_;
  int64_t buffer_size_;
};

class PrefetchToDeviceIterator : public IteratorBase {
 public:
  PrefetchToDeviceIterator(const PrefetchToDeviceDataset* d, const IteratorContext& ctx,
                           std::unique_ptr<IteratorBase> input, backend::Backend* backend)
      : IteratorBase(d, ctx, NodeKind::kAsync),
        input_(std::move(input)),
        backend_(backend),
        buffer_size_(d->buffer_size()),
        // Every buffered element's tensors plus those of the element being staged, with room
        // for a few components per element.
        staging_(static_cast<size_t>(4 * (d->buffer_size() + 2))) {
    stats().buffer_size.DeclareFixed(buffer_size_);
    cancel_token_ = ctx.cancellation->Register([this] { Cancel(); });
  }

  ~PrefetchToDeviceIterator() override {
    Cancel();
    if (producer_.joinable()) producer_.join();
    ctx().cancellation->Deregister(cancel_token_);
    for (Entry& e : buffer_) {
      Uncount(e);
      SynchronizeAll(e.copies).IgnoreError();
    }
  }

 protected:
  Result GetNextInternal() override {
    Entry e;
    {
      MutexLock l(&mu_);
      if (!started_) {
        started_ = true;
        if (!input_ended_) producer_ = std::thread([this] { ProducerLoop(); });
      }
      while (!cancelled_ && buffer_.empty()) consumer_cv_.Wait(&mu_);
      if (cancelled_) return absl::CancelledError("iterator destroyed");
      if (IsEndOfSequence(buffer_.front().result)) return std::nullopt;  // every later call too
      e = std::move(buffer_.front());
      buffer_.pop_front();
      Uncount(e);
      last_source_ = std::move(e.source);
      producer_cv_.Signal();
    }
    // The device's kernels start after the copies; the host goes on at once.
    for (const auto& copy : e.copies) SLUICE_RETURN_IF_ERROR(backend_->WaitEvent(*copy));
    return std::move(e.result);
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    mu_.Lock();
    // Quiesce: the producer finishes the element it is staging and starts no other.
    paused_ = true;
    while (!cancelled_ && fetching_) consumer_cv_.Wait(&mu_);
    absl::Status s = absl::CancelledError("iterator destroyed");
    if (!cancelled_) {
      (*state->mutable_ints())["input_ended"] = input_ended_;
      // The paused producer touches neither the buffer nor the input, and the consumer is the
      // caller: both are saved unlocked, so that a cancellation callback never waits for the
      // copies back from the device or the input's Save.
      mu_.Unlock();
      s = SaveWhilePaused(state);
      mu_.Lock();
    }
    paused_ = false;
    mu_.Unlock();
    producer_cv_.Signal();
    return s;
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    {
      MutexLock l(&mu_);
      if (started_) {
        return absl::FailedPreconditionError("PrefetchToDevice: Restore after the first GetNext");
      }
    }
    // No producer yet: the input is restored, the saved elements recomputed through it and
    // copied to the device without the lock, which a cancellation callback takes.
    SLUICE_RETURN_IF_ERROR(RestoreInput(input_.get(), state));
    SLUICE_ASSIGN_OR_RETURN(SavedBuffer saved, ReadSavedBuffer(state, *this, input_.get()));
    std::vector<Entry> entries(saved.results.size());
    for (size_t i = 0; i < saved.results.size(); ++i) {
      Result& result = saved.results[i];
      if (result.ok() && result->has_value()) {
        // Synchronous copies: a restore happens once, before the first step.
        SLUICE_ASSIGN_OR_RETURN(**result,
                                backend::ElementToDevice(std::move(**result), backend_->device()));
      }
      entries[i].result = std::move(result);
      entries[i].source = std::move(saved.sources[i]);
    }
    MutexLock l(&mu_);
    input_ended_ = saved.input_ended;
    for (Entry& e : entries) Push(std::move(e), /*from_input=*/false);
    return absl::OkStatus();
  }

  bool DescribeLastInternal(ElementSource* out) override { return AppendSource(last_source_, out); }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    // The producer has not started: the input is free. On the device, as GetNext returns it.
    SLUICE_ASSIGN_OR_RETURN(Element host, input_->Recompute(source));
    return backend::ElementToDevice(std::move(host), backend_->device());
  }

 private:
  struct Entry : BufferedEntry {
    std::vector<std::shared_ptr<backend::Event>> copies;  // of the result's device tensors
    // An element the producer took from the input, counted in NodeStats::inputs_held until it
    // leaves the buffer (not one a restore recomputed: the input never handed that over).
    bool held = false;
  };

  void Cancel() {
    MutexLock l(&mu_);
    cancelled_ = true;
    consumer_cv_.SignalAll();
    producer_cv_.SignalAll();
  }

  // The buffer (an element with a source as it, no copy back from the device) and the input,
  // with mu_ released, which the analysis cannot follow: see SaveInternal.
  absl::Status SaveWhilePaused(proto::IteratorStateProto* state) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (const Entry& e : buffer_) {
      if (SavesAsSource(e.result, e.source)) {
        BufferedToProto(e.result, e.source, state->add_buffer());
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(Result host, OnHost(e));
      ResultToProto(host, state->add_buffer());
    }
    return SaveInput(input_.get(), state);
  }

  // Host copies of a buffered element's device tensors, for a checkpoint.
  absl::StatusOr<Result> OnHost(const Entry& e) {
    if (!e.result.ok() || !e.result->has_value()) return e.result;
    SLUICE_RETURN_IF_ERROR(SynchronizeAll(e.copies));
    SLUICE_ASSIGN_OR_RETURN(Element host, backend::ElementToHost(**e.result));
    return Result(std::move(host));
  }

  // Starts the copies of `result`'s host tensors to the device.
  Entry Stage(Result result) {
    Entry e;
    if (result.ok() && result->has_value()) {
      absl::Status s = StageElement(**result, e.copies);
      if (!s.ok()) {
        // Nothing may be freed under a copy still running.
        SynchronizeAll(e.copies).IgnoreError();
        e.copies.clear();
        result = s;
      }
    }
    e.result = std::move(result);
    return e;
  }
  absl::Status StageElement(Element& element,
                            std::vector<std::shared_ptr<backend::Event>>& copies) {
    for (Tensor& t : element) {
      if (!backend::MovesToDevice(t)) continue;
      SLUICE_ASSIGN_OR_RETURN(Tensor staging, staging_.Take(*backend_, t.dtype(), t.shape()));
      // Both on the host: the pipeline's tensor into memory the device copies from.
      std::memcpy(staging.raw_data(), t.raw_data(), t.byte_size());
      SLUICE_ASSIGN_OR_RETURN(Tensor on_device, backend_->Allocate(t.dtype(), t.shape()));
      SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<backend::Event> copy,
                              backend_->CopyAsync(staging, on_device));
      copies.push_back(copy);
      SLUICE_RETURN_IF_ERROR(staging_.Give(std::move(staging), std::move(copy)));
      t = std::move(on_device);
    }
    return absl::OkStatus();
  }

  void Push(Entry e, bool from_input) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CountBuffered(stats(), e);
    e.held = from_input && e.result.ok() && e.result->has_value();
    if (e.held) stats().inputs_held.fetch_add(1, std::memory_order_relaxed);
    buffer_.push_back(std::move(e));
  }
  void Uncount(const Entry& e) {
    UncountBuffered(stats(), e);
    if (e.held) stats().inputs_held.fetch_sub(1, std::memory_order_relaxed);
  }

  void ProducerLoop() {
    pthread_setname_np(pthread_self(), "to device");  // how profiles and debuggers show it
    MutexLock l(&mu_);
    while (true) {
      while (!cancelled_ && (paused_ || static_cast<int64_t>(buffer_.size()) >= buffer_size_)) {
        producer_cv_.Wait(&mu_);
      }
      if (cancelled_) return;
      fetching_ = true;
      mu_.Unlock();
      stats().active_workers.store(1, std::memory_order_relaxed);
      Result result = input_->GetNext();
      stats().active_workers.store(0, std::memory_order_relaxed);
      ElementSource source;
      if (result.ok() && result->has_value()) source = SourceOfLast(*input_);
      Entry e;
      {
        ScopedTimer busy(&stats().busy_ns);
        e = Stage(std::move(result));
      }
      e.source = std::move(source);
      mu_.Lock();
      fetching_ = false;
      consumer_cv_.SignalAll();  // GetNext, or a Save waiting for this pull
      if (cancelled_) {
        SynchronizeAll(e.copies).IgnoreError();  // nobody will read it
        return;
      }
      const bool end = IsEndOfSequence(e.result);
      if (end) input_ended_ = true;
      Push(std::move(e), /*from_input=*/true);
      if (end) return;
    }
  }

  std::unique_ptr<IteratorBase> input_;
  backend::Backend* const backend_;
  const int64_t buffer_size_;
  int64_t cancel_token_ = -1;
  std::thread producer_;
  StagingPool staging_;        // the producer's
  ElementSource last_source_;  // of the element GetNext returned last (the consumer's)

  Mutex mu_;
  CondVar consumer_cv_;                            // an entry arrived, or a pull ended (for Save)
  CondVar producer_cv_;                            // room in the buffer, or resumed
  std::deque<Entry> buffer_ ABSL_GUARDED_BY(mu_);  // in input order
  bool fetching_ ABSL_GUARDED_BY(mu_) = false;     // the producer is pulling or staging
  bool paused_ ABSL_GUARDED_BY(mu_) = false;       // Save in progress
  bool input_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> PrefetchToDeviceDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (buffer_size_ < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": buffer_size must be >= 1, got ", buffer_size_));
  }
  absl::StatusOr<backend::Backend*> backend = backend::BackendFor(device_);
  if (!backend.ok()) {
    return WithContext(backend.status(), absl::StrCat(name(), ": "));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(
      new PrefetchToDeviceIterator(this, ctx, std::move(input), *backend));
}

}  // namespace

Dataset PrefetchToDevice(const Dataset& input, const Device& device, int64_t buffer_size) {
  return Dataset(std::make_shared<PrefetchToDeviceDataset>(input.base(), device, buffer_size));
}

}  // namespace sluice::train::data
