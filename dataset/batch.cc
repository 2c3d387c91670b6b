// Batch(batch_size, {drop_remainder, num_parallel_calls}): stacks
// `batch_size` consecutive elements into one whose components gain a first
// dimension of the batch's size. Each output component is allocated once per
// batch and every element is copied into its row in place.
//
// With num_parallel_calls > 1 (or kAutotune) the row copies of a large batch
// are split into chunks: oneTBB tasks on the pipeline's arena and the calling
// thread claim chunks from a shared counter, so the caller never waits for a
// task that has not started, only for copies already running. When the
// workers are busy the caller copies every chunk and the tasks stay queued:
// they then hold nothing of the batch, and destroying the iterator waits for
// them, so that none outlives it.
//
// Elements that are already the rows of one buffer, back to back and in order
// (a Map that writes its results where Batch would copy them, as `sluice
// bench` does), are not copied: the batch is that buffer.
//
// A batch of images is tens of MB, past what malloc serves from its heap: each
// one would be a fresh mmap whose every page faults and is zeroed by the kernel
// (a quarter of the JPEG pipeline's CPU time, measured with perf). The buffers
// of batches the consumer has dropped are kept for the next batches instead,
// a few at most.
//
// An input error is returned as it is; the elements already gathered for the
// batch it interrupted are dropped with it (as in tf.data), and the next
// batch starts with the element after the error.
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/buffer_pool.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "dataset/batching_iterator.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/knob.h"

namespace sluice {
namespace {

// Below this many bytes a chunk is not worth a task handoff (a few µs).
constexpr size_t kMinBytesPerChunk = 32 << 10;
// Copy cost of one string, in bytes of memcpy, for chunk sizing.
constexpr size_t kBytesPerString = 64;

// Below this size malloc's heap recycles memory well enough.
constexpr size_t kMinRecycledBytes = 1 << 20;
// Free blocks kept: the consumer drops a batch about when Batch needs the
// next, so one or two cover the steady state.
constexpr size_t kMaxFreeBlocks = 2;

class BatchDataset : public DatasetBase {
 public:
  BatchDataset(std::shared_ptr<const DatasetBase> input, int64_t batch_size, BatchOptions options)
      : DatasetBase("Batch", {std::move(input)}), batch_size_(batch_size), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (n < 0) return n;                               // infinite or unknown, like the input
    if (batch_size_ <= 0) return kUnknownCardinality;  // MakeIterator reports it
    // Not (n + b - 1) / b, which overflows for a batch of INT64_MAX ("everything").
    return n / batch_size_ + (!options_.drop_remainder && n % batch_size_ != 0 ? 1 : 0);
  }

  // The batch dimension is known only when every batch is full.
  ElementSpec ComputeElementSpec() const override {
    return inputs()[0]->element_spec().Batched(
        options_.drop_remainder && batch_size_ > 0 ? batch_size_ : PartialShape::kUnknownDim);
  }

  std::string Describe() const override {
    std::string s = absl::StrCat("Batch(", batch_size_);
    if (options_.drop_remainder) s += ", drop_remainder";
    if (options_.num_parallel_calls != 1) {
      absl::StrAppend(&s, ", num_parallel_calls=", KnobString(options_.num_parallel_calls));
    }
    return s + ")";
  }

  int64_t batch_size() const { return batch_size_; }
  const BatchOptions& batch_options() const { return options_; }

 private:
  int64_t batch_size_;
  BatchOptions options_;
};

// The rows of one batch being copied by several threads. Tasks hold it by
// shared_ptr: one that starts after the batch is complete finds no chunk left.
struct FillJob {
  std::vector<Element> rows;
  Element out;                // views of the batch's buffers
  std::vector<char> adopted;  // components that need no copy
  int64_t rows_per_chunk = 1;
  int num_chunks = 1;
  std::atomic<int> next_chunk{0};
  std::atomic<int> chunks_done{0};
  Mutex mu;
  CondVar cv;
  absl::Status status ABSL_GUARDED_BY(mu);  // the first copy error

  // Copies chunks until none is left to claim.
  void Run() {
    // Pairs with the setup in MakeBatch: TBB's task queue already orders
    // them, but ThreadSanitizer cannot see into the uninstrumented libtbb.
    { MutexLock l(&mu); }
    for (int c = next_chunk.fetch_add(1); c < num_chunks; c = next_chunk.fetch_add(1)) {
      const int64_t begin = c * rows_per_chunk;
      const int64_t end = std::min<int64_t>(begin + rows_per_chunk, rows.size());
      absl::Status s;
      for (int64_t i = begin; i < end && s.ok(); ++i) {
        for (size_t k = 0; k < out.size() && s.ok(); ++k) {
          // On a pool thread, outside any GetNext: a string row's copy may allocate.
          if (!adopted[k])
            s = ExceptionsAsStatus([&] { return out[k].CopyIntoRow(i, rows[i][k]); });
        }
      }
      MutexLock l(&mu);
      if (status.ok()) status = s;
      if (chunks_done.fetch_add(1) + 1 == num_chunks) cv.SignalAll();
    }
  }
};

// The copy tasks an iterator has scheduled that have not finished yet.
struct PendingTasks {
  Mutex mu;
  CondVar cv;
  int count ABSL_GUARDED_BY(mu) = 0;

  void Done() {
    MutexLock l(&mu);
    if (--count == 0) cv.SignalAll();
  }
};

class BatchIterator : public BatchingIterator {
 public:
  BatchIterator(const BatchDataset* d, const IteratorContext& ctx,
                std::unique_ptr<IteratorBase> input)
      : BatchingIterator(d, ctx, std::move(input), d->batch_size(),
                         d->batch_options().drop_remainder) {
    const int requested = d->batch_options().num_parallel_calls;
    if (requested != 1) {
      stats().parallelism.DeclareFromOption(requested, ctx.runtime->num_threads());
    }
  }

  // A copy task still queued (the caller copied its chunk while the workers
  // were busy) would otherwise outlive the iterator, and the process when it
  // exits right after: LeakSanitizer reported one (tests/lsan.supp hid it).
  // Each finds no chunk left and ends at once; the wait is for the workers to
  // get to it, the pipeline being cancelled already. Not on a worker of the
  // arena itself, where the wait could be for that very thread.
  ~BatchIterator() override {
    if (ctx().runtime->OnWorker()) return;
    MutexLock l(&pending_->mu);
    while (pending_->count > 0) pending_->cv.Wait(&pending_->mu);
  }

 private:
  // Every element must match the batch's first in arity, dtypes and shapes.
  absl::Status Validate() const {
    const Element& first = rows_[0];
    for (size_t j = 1; j < rows_.size(); ++j) {
      const Element& e = rows_[j];
      if (e.size() != first.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("element ", j, " of the batch has ", e.size(), " components, expected ",
                         first.size(), " like the batch's first element"));
      }
      for (size_t k = 0; k < e.size(); ++k) {
        if (e[k].dtype() != first[k].dtype()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "element ", j, " of the batch: component ", k, " has dtype ", DTypeName(e[k].dtype()),
              ", expected ", DTypeName(first[k].dtype()), " like the batch's first element"));
        }
        if (e[k].shape() != first[k].shape()) {
          return absl::InvalidArgumentError(
              absl::StrCat("element ", j, " of the batch: component ", k, " has shape ",
                           e[k].shape().DebugString(), ", expected ",
                           first[k].shape().DebugString(), " like the batch's first element"));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Element> MakeBatch() override {
    SLUICE_RETURN_IF_ERROR(Validate());
    const int64_t n = static_cast<int64_t>(rows_.size());
    const Element& first = rows_[0];
    Element out;
    out.reserve(first.size());
    std::vector<char> adopted(first.size(), 0);
    for (size_t k = 0; k < first.size(); ++k) {
      const Tensor& t = first[k];
      Shape s = t.shape();
      s.InsertDim(0, n);
      const size_t bytes = static_cast<size_t>(s.num_elements()) * DTypeSize(t.dtype());
      if (std::shared_ptr<Buffer> whole = RowsOfOneBuffer(k, bytes)) {
        SLUICE_ASSIGN_OR_RETURN(Tensor view, Tensor::FromBuffer(t.dtype(), std::move(s), whole));
        out.push_back(std::move(view));
        adopted[k] = 1;
        continue;
      }
      if (t.dtype() == DType::kBytes || bytes < kMinRecycledBytes) {
        out.emplace_back(t.dtype(), std::move(s));
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(Tensor recycled,
                              Tensor::FromBuffer(t.dtype(), std::move(s), pool_->Get(bytes)));
      out.push_back(std::move(recycled));
    }
    const int chunks = NumChunks();
    if (chunks <= 1) {
      for (int64_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < out.size(); ++k) {
          if (!adopted[k]) SLUICE_RETURN_IF_ERROR(out[k].CopyIntoRow(i, rows_[i][k]));
        }
      }
      return out;
    }
    auto job = std::make_shared<FillJob>();
    {
      MutexLock l(&job->mu);
      job->rows = std::move(rows_);
      job->out = out;
      job->adopted = adopted;
      job->rows_per_chunk = (n + chunks - 1) / chunks;
      job->num_chunks = static_cast<int>((n + job->rows_per_chunk - 1) / job->rows_per_chunk);
    }
    {
      MutexLock l(&pending_->mu);
      pending_->count += job->num_chunks - 1;
    }
    for (int c = 1; c < job->num_chunks; ++c) {
      ctx().runtime->Schedule([job, pending = pending_]() mutable {
        job->Run();
        job.reset();  // before the iterator, which may be waiting, can go
        pending->Done();
      });
    }
    job->Run();
    MutexLock l(&job->mu);
    // Every chunk is claimed by now; the ones still running are plain copies.
    while (job->chunks_done.load() != job->num_chunks) job->cv.Wait(&job->mu);
    // The batch is made: the tasks not started yet must not keep its rows, or
    // a view of it, until they run. A task touches neither once every chunk is
    // claimed. The rows come back to keep the vector's capacity.
    rows_ = std::move(job->rows);
    job->out.clear();
    SLUICE_RETURN_IF_ERROR(job->status);
    return out;
  }

  // The buffer whose bytes are exactly component k of every row, back to back
  // in order (`bytes` in all), or nullptr: then the batch can be that buffer.
  std::shared_ptr<Buffer> RowsOfOneBuffer(size_t k, size_t bytes) const {
    // One element owning its whole buffer is the common case, not a sign of
    // rows written in place: copy it, as tf.data does.
    if (rows_.size() < 2) return nullptr;
    const Tensor& t0 = rows_[0][k];
    const std::shared_ptr<Buffer>& whole = t0.buffer();
    if (t0.dtype() == DType::kBytes || whole == nullptr || whole->size() != bytes ||
        t0.raw_data() != whole->data() || whole->device().type != DeviceType::kCpu) {
      return nullptr;
    }
    const size_t row_bytes = t0.byte_size();
    for (size_t i = 1; i < rows_.size(); ++i) {
      const Tensor& t = rows_[i][k];
      if (t.buffer() != whole ||
          t.raw_data() != static_cast<const char*>(t0.raw_data()) + i * row_bytes) {
        return nullptr;
      }
    }
    return whole;
  }

  // How many pieces to split this batch's copies into: at most the
  // parallelism knob (read per batch, AUTOTUNE may change it), and only as
  // many as there is enough data for.
  int NumChunks() {
    const Tunable& p = stats().parallelism;
    if (!p.present) return 1;
    const int64_t parallelism = std::max<int64_t>(1, p.value.load(std::memory_order_relaxed));
    if (parallelism == 1) return 1;
    size_t row_cost = 0;
    for (const Tensor& t : rows_[0]) {
      row_cost += t.dtype() == DType::kBytes
                      ? t.byte_size() + static_cast<size_t>(t.num_elements()) * kBytesPerString
                      : t.byte_size();
    }
    const int64_t n = static_cast<int64_t>(rows_.size());
    const int64_t by_size = static_cast<int64_t>(row_cost * n / kMinBytesPerChunk);
    return static_cast<int>(std::max<int64_t>(1, std::min({parallelism, n, by_size})));
  }

  std::shared_ptr<BufferPool> pool_ = BufferPool::Create(kMaxFreeBlocks);
  const std::shared_ptr<PendingTasks> pending_ = std::make_shared<PendingTasks>();
};

absl::StatusOr<std::unique_ptr<IteratorBase>> BatchDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (batch_size_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": batch_size must be > 0, got ", batch_size_));
  }
  SLUICE_RETURN_IF_ERROR(CheckKnob(name(), "num_parallel_calls", options_.num_parallel_calls));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new BatchIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Batch(int64_t batch_size, BatchOptions options) const {
  return Dataset(std::make_shared<BatchDataset>(base(), batch_size, options));
}

}  // namespace sluice
