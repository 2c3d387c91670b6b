// TFRecord(files, {compression, buffer_size, num_parallel_reads, skip_corrupt}):
// the records of each file as scalar bytes tensors, like
// tf.data.TFRecordDataset.
//
// With num_parallel_reads == 1 the files are read one after the other in the
// caller's thread. With more (or kAutotune) it is an interleave of the files
// with block length 1, as in tf.data: `cycle` files are open at once, records
// are taken round robin from them, and a file that ends (or fails) gives its
// place in the cycle to the next file. Reader threads of our own (reads
// block, so not oneTBB tasks) fill a bounded buffer per open file ahead of
// the consumer. The order is that of the sequential round robin whatever the
// number of threads, unless the pipeline is non-deterministic, in which case
// the consumer takes a record from whichever file has one first.
//
// An error (a missing file, a corrupt record) is returned in the file's turn
// and ends that file: the next call goes on with the next file, so that
// IgnoreErrors can continue. Records skipped with skip_corrupt count in the
// node's `skipped` statistic.
#include <algorithm>
#include <atomic>
#include <deque>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/knob.h"
#include "dataset/tfrecord_fingerprint.h"
#include "io/tfrecord_reader.h"

namespace sluice {
namespace {

// Files open at once for num_parallel_reads = kAutotune. The cycle decides
// the order of the records, so it is a constant (not the machine's core
// count, as in tf.data): a run, or a checkpoint, gives the same order on any
// machine. AUTOTUNE tunes the reader threads and the buffers instead.
constexpr int kAutotuneCycleLength = 16;
// Records buffered per open file at first; AUTOTUNE may change it.
constexpr int64_t kDefaultRecordsPerFile = 16;
constexpr int64_t kMaxRecordsPerFile = 1024;

class TFRecordDataset : public DatasetBase {
 public:
  TFRecordDataset(std::vector<std::string> files, TFRecordOptions options)
      : DatasetBase("TFRecord", {}), files_(std::move(files)), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  std::string Describe() const override {
    std::string s =
        absl::StrCat("TFRecord(", files_.size(), files_.size() == 1 ? " file" : " files");
    if (options_.compression) absl::StrAppend(&s, ", ", CompressionName(*options_.compression));
    if (options_.num_parallel_reads != 1) {
      absl::StrAppend(&s, ", num_parallel_reads=", KnobString(options_.num_parallel_reads));
    }
    if (options_.skip_corrupt) absl::StrAppend(&s, ", skip_corrupt");
    if (options_.with_index) absl::StrAppend(&s, ", with_index");
    return s + ")";
  }

  ElementSpec ComputeElementSpec() const override {
    if (options_.with_index) return {{DType::kBytes, {}}, {DType::kInt64, {}}};
    return {{DType::kBytes, {}}};
  }

  // The element of `record`, which `reader` has just read: with its index when asked.
  Element MakeElement(std::string record, const TFRecordReader& reader) const {
    Element element{Tensor::Scalar<std::string>(std::move(record))};
    if (options_.with_index) element.push_back(Tensor::Scalar<int64_t>(reader.last_record().index));
    return element;
  }

  const std::vector<std::string>& files() const { return files_; }
  absl::Status AppendSourceFiles(std::vector<std::string>* files) const override {
    files->insert(files->end(), files_.begin(), files_.end());
    return absl::OkStatus();
  }
  const TFRecordOptions& tfrecord_options() const { return options_; }

  // Opens file `i` at the start of record `record_index`, which begins at
  // `offset` (both as the reader reported them), once the file matches the
  // checkpoint's `fingerprint` (for a restored position). Uncompressed files
  // seek; compressed ones are read forward, stopping early if `cancelled`.
  absl::StatusOr<std::unique_ptr<TFRecordReader>> OpenAt(
      size_t i, uint64_t offset, int64_t record_index, const TFRecordFingerprint& fingerprint = {},
      const std::atomic<bool>* cancelled = nullptr) const {
    const std::string& path = files_[i];
    TFRecordReaderOptions ro;
    ro.compression = options_.compression.value_or(GuessCompression(path));
    ro.skip_corrupt = options_.skip_corrupt;
    ro.buffer_size = options_.buffer_size;
    ro.max_record_bytes = options_.max_record_bytes;
    ro.on_skipped = options_.on_skipped;
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader, TFRecordReader::Open(path, ro));
    if (record_index == 0) return reader;
    SLUICE_RETURN_IF_ERROR(fingerprint.CheckSize(path));
    if (fingerprint.record >= 0) {
      SLUICE_RETURN_IF_ERROR(MoveTo(*reader, static_cast<uint64_t>(fingerprint.offset),
                                    fingerprint.record, cancelled));
      SLUICE_RETURN_IF_ERROR(fingerprint.CheckRecord(*reader));
    }
    SLUICE_RETURN_IF_ERROR(MoveTo(*reader, offset, record_index, cancelled));
    return reader;
  }

  // Moves `reader` to record `record_index` at `offset`: a seek in an uncompressed file, reading
  // forward in a compressed one (which must then find the record there). Already there, the
  // reader stays as it is (its last record is the fingerprint's).
  static absl::Status MoveTo(TFRecordReader& reader, uint64_t offset, int64_t record_index,
                             const std::atomic<bool>* cancelled) {
    if (reader.records_read() == record_index && reader.offset() == offset) {
      return absl::OkStatus();
    }
    if (reader.options().compression == Compression::kNone) {
      return reader.Seek(offset, record_index);
    }
    std::string record;
    while (reader.records_read() < record_index) {
      if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) {
        return absl::CancelledError("iterator destroyed");
      }
      SLUICE_ASSIGN_OR_RETURN(bool more, reader.ReadRecord(&record));
      if (!more) {
        return absl::DataLossError(absl::StrCat(reader.path(), ": ends after ",
                                                reader.records_read(),
                                                " records, but the checkpoint is at record ",
                                                record_index, " (has the file changed?)"));
      }
    }
    if (reader.records_read() != record_index || reader.offset() != offset) {
      return absl::DataLossError(absl::StrCat(reader.path(), ": record ", reader.records_read(),
                                              " is at uncompressed offset ", reader.offset(),
                                              ", but the checkpoint has record ", record_index,
                                              " at offset ", offset, " (has the file changed?)"));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::string> files_;
  TFRecordOptions options_;
};

// Reads the files one after the other in the caller's thread.
class SequentialTFRecordIterator : public IteratorBase {
 public:
  SequentialTFRecordIterator(const TFRecordDataset* d, const IteratorContext& ctx)
      : IteratorBase(d, ctx, NodeKind::kSource), d_(d) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (file_ < d_->files().size()) {
      if (!reader_) {
        absl::StatusOr<std::unique_ptr<TFRecordReader>> opened =
            d_->OpenAt(file_, start_offset_, start_record_, start_fingerprint_);
        start_offset_ = 0;
        start_record_ = 0;
        start_fingerprint_ = {};
        if (!opened.ok()) {
          ++file_;
          return opened.status();
        }
        reader_ = std::move(*opened);
        skipped_seen_ = reader_->records_skipped();  // Not those passed while restoring.
      }
      std::string record;
      last_offset_ = reader_->offset();
      last_record_ = reader_->records_read();
      absl::StatusOr<bool> more = reader_->ReadRecord(&record);
      const int64_t skipped = reader_->records_skipped();
      stats().skipped.fetch_add(skipped - skipped_seen_, std::memory_order_relaxed);
      skipped_seen_ = skipped;
      if (more.ok() && *more) return d_->MakeElement(std::move(record), *reader_);
      reader_.reset();
      ++file_;
      if (!more.ok()) return more.status();
    }
    return std::nullopt;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["file"] = static_cast<int64_t>(file_);
    ints["offset"] = static_cast<int64_t>(reader_ ? reader_->offset() : start_offset_);
    ints["record"] = reader_ ? reader_->records_read() : start_record_;
    (reader_ ? TFRecordFingerprint::Of(*reader_) : start_fingerprint_).Save("", state);
    return absl::OkStatus();
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t file, SavedInt(state, "file"));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, SavedInt(state, "offset"));
    SLUICE_ASSIGN_OR_RETURN(start_record_, SavedInt(state, "record"));
    if (file < 0 || file > static_cast<int64_t>(d_->files().size()) || offset < 0 ||
        start_record_ < 0) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " is at file ", file,
                                              " of ", d_->files().size(), ", record ",
                                              start_record_, ", offset ", offset));
    }
    SLUICE_ASSIGN_OR_RETURN(start_fingerprint_,
                            TFRecordFingerprint::Restore(state, "", start_record_, offset));
    file_ = static_cast<size_t>(file);
    start_offset_ = static_cast<uint64_t>(offset);
    return absl::OkStatus();  // The file is opened at the next GetNext.
  }

  // The file, and the offset and number of the record read (a seek away in an uncompressed file;
  // a compressed one would be read from its start for each element, so it describes nothing).
  bool DescribeLastInternal(ElementSource* out) override {
    if (reader_ == nullptr || reader_->options().compression != Compression::kNone) return false;
    out->insert(out->end(),
                {static_cast<int64_t>(file_), static_cast<int64_t>(last_offset_), last_record_});
    return true;
  }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t file,
                            source.NextIn(name(), 0, static_cast<int64_t>(d_->files().size())));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, source.NextIn(name(), 0, INT64_MAX));
    SLUICE_ASSIGN_OR_RETURN(int64_t record, source.NextIn(name(), 0, INT64_MAX));
    // A restore recomputes many records of few files: one reader, seeking.
    if (recompute_reader_ != nullptr && recompute_file_ == file) {
      SLUICE_RETURN_IF_ERROR(recompute_reader_->Seek(static_cast<uint64_t>(offset), record));
    } else {
      recompute_reader_.reset();
      SLUICE_ASSIGN_OR_RETURN(recompute_reader_,
                              d_->OpenAt(static_cast<size_t>(file), offset, record));
      recompute_file_ = file;
    }
    std::string bytes;
    SLUICE_ASSIGN_OR_RETURN(bool more, recompute_reader_->ReadRecord(&bytes));
    if (!more) {
      return absl::DataLossError(absl::StrCat(d_->files()[file], ": no record at offset ", offset,
                                              " (record ", record,
                                              "), where the checkpoint has "
                                              "one (has the file changed?)"));
    }
    return d_->MakeElement(std::move(bytes), *recompute_reader_);
  }

 private:
  const TFRecordDataset* d_;
  size_t file_ = 0;
  std::unique_ptr<TFRecordReader> reader_;  // file_'s, once opened
  // Where file_ is to be opened (a restored position).
  uint64_t start_offset_ = 0;
  int64_t start_record_ = 0;
  TFRecordFingerprint start_fingerprint_;
  int64_t skipped_seen_ = 0;
  // Where the last record read began.
  uint64_t last_offset_ = 0;
  int64_t last_record_ = 0;
  std::unique_ptr<TFRecordReader> recompute_reader_;  // Recompute's, of file recompute_file_
  int64_t recompute_file_ = -1;
};

// Reads `cycle` files at once on reader threads, interleaving their records.
class ParallelTFRecordIterator : public IteratorBase {
 public:
  ParallelTFRecordIterator(const TFRecordDataset* d, const IteratorContext& ctx, int cycle)
      : IteratorBase(d, ctx, NodeKind::kAsync), d_(d) {
    const size_t n = std::min(static_cast<size_t>(cycle), d->files().size());
    slots_.resize(n);
    for (size_t i = 0; i < n; ++i) slots_[i].file = static_cast<int64_t>(i);
    next_file_ = n;
    num_active_ = static_cast<int64_t>(n);
    deterministic_ = ctx.deterministic();

    // Reader threads at work, and records buffered per open file. AUTOTUNE starts at no more
    // readers than cores (inflating is CPU work) and may go up to one per open file.
    const int64_t max_readers = std::max<int64_t>(1, static_cast<int64_t>(n));
    if (d->tfrecord_options().num_parallel_reads == kAutotune) {
      stats().parallelism.DeclareTunable(
          /*initial=*/std::min<int64_t>(max_readers, std::max(1, ctx.runtime->num_threads())),
          /*lo=*/1, /*hi=*/max_readers);
      stats().buffer_size.DeclareTunable(/*initial=*/kDefaultRecordsPerFile, /*lo=*/1,
                                         /*hi=*/kMaxRecordsPerFile);
    } else {
      stats().parallelism.DeclareFixed(max_readers);
      stats().buffer_size.DeclareFixed(kDefaultRecordsPerFile);
    }
    stats().cycle_length.DeclareFixed(cycle);  // it decides the order

    cancel_token_ = ctx.cancellation->Register([this] { Cancel(); });
  }

  ~ParallelTFRecordIterator() override {
    Cancel();
    for (std::thread& t : threads_) t.join();
    ctx().cancellation->Deregister(cancel_token_);
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    MutexLock l(&mu_);
    StartThreads();
    while (true) {
      if (cancelled_) return absl::CancelledError("iterator destroyed");
      if (num_active_ == 0) return std::nullopt;
      const size_t n = slots_.size();
      size_t ready = n;  // the slot to take from, if any
      if (deterministic_) {
        const Slot& s = slots_[cursor_];
        if (s.file < 0) {  // Only once every file has had its turn.
          cursor_ = (cursor_ + 1) % n;
          continue;
        }
        if (!s.records.empty() || s.ended) ready = cursor_;
      } else {
        for (size_t k = 0; k < n && ready == n; ++k) {
          const size_t j = (cursor_ + k) % n;
          const Slot& s = slots_[j];
          if (s.file >= 0 && (!s.records.empty() || s.ended)) ready = j;
        }
      }
      if (ready == n) {
        profiler::Span span("wait", profiler::Active() ? WaitSpanName() : nullptr);
        consumer_cv_.Wait(&mu_);  // Woken by a reader thread, or by cancellation.
        continue;
      }
      Slot& s = slots_[ready];
      cursor_ = (ready + 1) % n;
      if (!s.records.empty()) {
        std::string record = std::move(s.records.front());
        s.records.pop_front();
        s.bytes -= static_cast<int64_t>(record.size());
        UpdateBuffered();
        if (NeedsRefill(s)) readers_cv_.Signal();
        return Element{Tensor::Scalar<std::string>(std::move(record))};
      }
      // The file ended (cleanly or with an error) and its records are all
      // taken: the next file takes its place in the cycle.
      absl::Status status = std::move(s.status);
      s = Slot();
      if (next_file_ < d_->files().size()) {
        s.file = static_cast<int64_t>(next_file_++);
      } else {
        --num_active_;
      }
      if (NeedsRefill(s)) readers_cv_.Signal();
      if (!status.ok()) return status;
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    MutexLock l(&mu_);
    // Quiesce: no reads in flight, so every reader's position matches its buffer.
    paused_ = true;
    while (!cancelled_ && busy_ != 0) consumer_cv_.Wait(&mu_);
    absl::Status s = cancelled_ ? absl::CancelledError("iterator destroyed") : SaveLocked(state);
    paused_ = false;
    readers_cv_.SignalAll();
    return s;
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    MutexLock l(&mu_);
    SLUICE_ASSIGN_OR_RETURN(int64_t slots, SavedInt(state, "slots"));
    SLUICE_ASSIGN_OR_RETURN(int64_t cursor, SavedInt(state, "cursor"));
    SLUICE_ASSIGN_OR_RETURN(int64_t next_file, SavedInt(state, "next_file"));
    SLUICE_ASSIGN_OR_RETURN(num_active_, SavedInt(state, "active"));
    const int64_t n = static_cast<int64_t>(slots_.size());
    const int64_t num_files = static_cast<int64_t>(d_->files().size());
    if (slots != n || cursor < 0 || (n > 0 && cursor >= n) || next_file < 0 ||
        next_file > num_files || num_active_ < 0 || num_active_ > n) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", state.node(), " has ", slots, " files open (cursor ",
                       cursor, ", next file ", next_file, ", ", num_active_,
                       " active), this pipeline reads ", n, " of ", num_files, " files at once"));
    }
    cursor_ = static_cast<size_t>(cursor);
    next_file_ = static_cast<size_t>(next_file);
    int buffer_index = 0;
    for (int64_t i = 0; i < n; ++i) {
      Slot& s = slots_[i];
      s = Slot();
      const std::string p = absl::StrCat("slot", i, ".");
      SLUICE_ASSIGN_OR_RETURN(s.file, SavedInt(state, p + "file"));
      SLUICE_ASSIGN_OR_RETURN(int64_t offset, SavedInt(state, p + "offset"));
      SLUICE_ASSIGN_OR_RETURN(s.start_record, SavedInt(state, p + "record"));
      SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, p + "ended"));
      SLUICE_ASSIGN_OR_RETURN(int64_t buffered, SavedInt(state, p + "buffered"));
      if (s.file < -1 || s.file >= num_files || offset < 0 || s.start_record < 0 || buffered < 0 ||
          buffer_index + buffered > state.buffer_size()) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", state.node(), ": slot ", i, " is corrupt"));
      }
      SLUICE_ASSIGN_OR_RETURN(s.start_fingerprint,
                              TFRecordFingerprint::Restore(state, p, s.start_record, offset));
      s.start_offset = static_cast<uint64_t>(offset);
      s.ended = ended != 0;
      if (s.ended) {
        SLUICE_ASSIGN_OR_RETURN(int64_t code, SavedInt(state, p + "code"));
        auto message = state.blobs().find(p + "message");
        if (code != 0) {
          s.status = absl::Status(static_cast<absl::StatusCode>(code),
                                  message == state.blobs().end() ? "" : message->second);
        }
      }
      for (int64_t k = 0; k < buffered; ++k) {
        SLUICE_ASSIGN_OR_RETURN(Element e,
                                ElementFromProto(state.buffer(buffer_index++).element()));
        if (e.size() != 1 || e[0].dtype() != DType::kBytes || e[0].num_elements() != 1) {
          return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), ": slot ", i,
                                                  " holds something other than a record"));
        }
        s.bytes += static_cast<int64_t>(e[0].scalar<std::string>().size());
        s.records.push_back(e[0].scalar<std::string>());
      }
    }
    UpdateBuffered();
    return absl::OkStatus();
  }

 private:
  // One place in the cycle: an open file and the records read ahead from it.
  struct Slot {
    int64_t file = -1;  // index into files(); -1: empty (every file had its turn)
    std::unique_ptr<TFRecordReader> reader;  // touched only by the thread that set `busy`
    // Where the file is to be opened (a restored position).
    uint64_t start_offset = 0;
    int64_t start_record = 0;
    TFRecordFingerprint start_fingerprint;
    std::deque<std::string> records;
    int64_t bytes = 0;
    bool ended = false;   // nothing more to read: the end of the file, or `status`
    absl::Status status;  // the error that ended it, returned after `records`
    bool busy = false;    // a reader thread is reading it
    int64_t skipped_seen = 0;
  };

  int64_t Parallelism() {
    return std::max<int64_t>(1, stats().parallelism.value.load(std::memory_order_relaxed));
  }
  int64_t Capacity() {
    return std::max<int64_t>(1, stats().buffer_size.value.load(std::memory_order_relaxed));
  }

  // Threads up to the current parallelism; surplus ones idle if it drops.
  void StartThreads() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t want =
        static_cast<size_t>(std::min<int64_t>(Parallelism(), stats().parallelism.max));
    while (threads_.size() < want) threads_.emplace_back([this] { ReaderLoop(); });
  }

  void UpdateBuffered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t records = 0, bytes = 0;
    for (const Slot& s : slots_) {
      records += static_cast<int64_t>(s.records.size());
      bytes += s.bytes;
    }
    stats().buffered_elements.store(records, std::memory_order_relaxed);
    stats().buffered_bytes.store(bytes, std::memory_order_relaxed);
  }

  void Cancel() {
    MutexLock l(&mu_);
    cancelled_ = true;
    consumer_cv_.SignalAll();
    readers_cv_.SignalAll();
  }

  // A slot is refilled (up to Capacity()) once at most half of it is left,
  // so that a reader reads many records per wake-up, not one.
  bool NeedsRefill(const Slot& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return s.file >= 0 && !s.busy && !s.ended &&
           static_cast<int64_t>(s.records.size()) <= Capacity() / 2;
  }

  // The slot a reader thread should fill next: the first, in the consumer's
  // order, that needs it. Returns slots_.size() if none (or none may start).
  size_t PickSlot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t n = slots_.size();
    if (paused_ || busy_ >= Parallelism()) return n;
    for (size_t k = 0; k < n; ++k) {
      const size_t j = (cursor_ + k) % n;
      if (NeedsRefill(slots_[j])) return j;
    }
    return n;
  }

  void ReaderLoop() {
    MutexLock l(&mu_);
    while (true) {
      size_t j = slots_.size();
      while (!cancelled_ && (j = PickSlot()) >= slots_.size()) readers_cv_.Wait(&mu_);
      if (cancelled_) return;
      Slot& s = slots_[j];
      s.busy = true;
      ++busy_;
      if (PickSlot() < slots_.size()) readers_cv_.Signal();  // More work for another.
      stats().active_workers.fetch_add(1, std::memory_order_relaxed);
      const size_t file = static_cast<size_t>(s.file);
      const uint64_t start_offset = s.start_offset;
      const int64_t start_record = s.start_record;
      const TFRecordFingerprint start_fingerprint = s.start_fingerprint;
      const int64_t want = Capacity() - static_cast<int64_t>(s.records.size());
      std::unique_ptr<TFRecordReader> reader = std::move(s.reader);
      int64_t skipped_seen = s.skipped_seen;
      mu_.Unlock();

      std::vector<std::string> records;
      absl::Status status;
      bool at_end = false;
      {
        ScopedTimer timer(&stats().busy_ns);
        if (!reader) {
          absl::StatusOr<std::unique_ptr<TFRecordReader>> opened =
              d_->OpenAt(file, start_offset, start_record, start_fingerprint, &cancelled_);
          if (opened.ok()) {
            reader = std::move(*opened);
            skipped_seen = reader->records_skipped();  // Not those passed while restoring.
          } else {
            status = opened.status();
          }
        }
        while (reader && status.ok() && !at_end && static_cast<int64_t>(records.size()) < want &&
               !cancelled_.load(std::memory_order_relaxed)) {
          std::string record;
          absl::StatusOr<bool> more = reader->ReadRecord(&record);
          if (!more.ok()) {
            status = more.status();
          } else if (!*more) {
            at_end = true;
          } else {
            records.push_back(std::move(record));
          }
        }
        if (reader) {
          stats().skipped.fetch_add(reader->records_skipped() - skipped_seen,
                                    std::memory_order_relaxed);
          skipped_seen = reader->records_skipped();
        }
      }

      mu_.Lock();
      stats().active_workers.fetch_sub(1, std::memory_order_relaxed);
      --busy_;
      s.busy = false;
      if (status.code() == absl::StatusCode::kCancelled && cancelled_) return;
      for (std::string& r : records) {
        s.bytes += static_cast<int64_t>(r.size());
        s.records.push_back(std::move(r));
      }
      if (!status.ok() || at_end) {
        s.ended = true;
        s.status = std::move(status);
        s.reader.reset();  // Close the file now.
      } else {
        s.reader = std::move(reader);
        s.skipped_seen = skipped_seen;
      }
      UpdateBuffered();
      consumer_cv_.SignalAll();  // The consumer, or a Save waiting for quiet.
    }
  }

  absl::Status SaveLocked(proto::IteratorStateProto* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto& ints = *state->mutable_ints();
    ints["slots"] = static_cast<int64_t>(slots_.size());
    ints["cursor"] = static_cast<int64_t>(cursor_);
    ints["next_file"] = static_cast<int64_t>(next_file_);
    ints["active"] = num_active_;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      const std::string p = absl::StrCat("slot", i, ".");
      ints[p + "file"] = s.file;
      ints[p + "offset"] = static_cast<int64_t>(s.reader ? s.reader->offset() : s.start_offset);
      ints[p + "record"] = s.reader ? s.reader->records_read() : s.start_record;
      (s.reader ? TFRecordFingerprint::Of(*s.reader) : s.start_fingerprint).Save(p, state);
      ints[p + "ended"] = s.ended;
      ints[p + "buffered"] = static_cast<int64_t>(s.records.size());
      if (s.ended) {
        ints[p + "code"] = static_cast<int64_t>(s.status.code());
        if (!s.status.ok())
          (*state->mutable_blobs())[p + "message"] = std::string(s.status.message());
      }
      for (const std::string& r : s.records) {
        ElementToProto(Element{Tensor::Scalar<std::string>(r)},
                       state->add_buffer()->mutable_element());
      }
    }
    return absl::OkStatus();
  }

  const TFRecordDataset* d_;
  bool deterministic_ = true;

  Mutex mu_;
  CondVar consumer_cv_;  // GetNext and Save wait here
  CondVar readers_cv_;   // reader threads wait here
  // A slot's reader is used by the thread that marked the slot busy, without the lock.
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);  // fixed size: reader threads hold references
  size_t cursor_ ABSL_GUARDED_BY(mu_) = 0;        // the slot whose turn it is
  size_t next_file_ ABSL_GUARDED_BY(mu_) = 0;     // the next file to take a place in the cycle
  int64_t num_active_ ABSL_GUARDED_BY(mu_) = 0;   // slots with a file
  int64_t busy_ ABSL_GUARDED_BY(mu_) = 0;         // reader threads reading
  bool paused_ ABSL_GUARDED_BY(mu_) = false;      // Save in progress
  std::atomic<bool> cancelled_{false};  // written under mu_; read without it while reading

  // Started at the first GetNext, after any Restore.
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  int64_t cancel_token_ = -1;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> TFRecordDataset::MakeIterator(
    const IteratorContext& ctx) const {
  const int reads = options_.num_parallel_reads;
  SLUICE_RETURN_IF_ERROR(CheckKnob(name(), "num_parallel_reads", reads));
  if (reads == 1) {
    return std::unique_ptr<IteratorBase>(new SequentialTFRecordIterator(this, ctx));
  }
  if (options_.with_index) {
    // The parallel reader's buffers and checkpoints hold records alone.
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": with_index reads the files one at a time: num_parallel_reads must be 1, not ",
        KnobString(reads), " (an Interleave of one TFRecord per file reads them in parallel)"));
  }
  return std::unique_ptr<IteratorBase>(
      new ParallelTFRecordIterator(this, ctx, reads == kAutotune ? kAutotuneCycleLength : reads));
}

}  // namespace

Dataset Dataset::TFRecord(std::vector<std::string> files, TFRecordOptions options) {
  return Dataset(std::make_shared<TFRecordDataset>(std::move(files), options));
}

Dataset Dataset::TFRecord(std::string file, TFRecordOptions options) {
  return TFRecord(std::vector<std::string>{std::move(file)}, options);
}

}  // namespace sluice
