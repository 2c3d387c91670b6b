#ifndef SLUICE_DATASET_DATASET_BASE_H_
#define SLUICE_DATASET_DATASET_BASE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#ifdef __GLIBCXX__
#include <cxxabi.h>
#endif
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/buffer_pool.h"
#include "core/device.h"
#include "core/element.h"
#include "core/runtime.h"
#include "dataset/cancellation.h"
#include "dataset/element_source.h"
#include "dataset/element_spec.h"
#include "dataset/node_stats.h"
#include "dataset/options.h"
#include "dataset/proto/iterator_state.pb.h"

// The contract between dataset ops. A DatasetBase describes a step of the
// pipeline and is immutable; MakeIterator creates the IteratorBase that
// produces its elements. Each op lives in dataset/<op>.{h,cc}.

namespace sluice {

inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

// What every iterator of one pipeline shares, plus the salt that makes
// per-element seeds differ between repetitions and inner pipelines.
struct IteratorContext {
  std::shared_ptr<Runtime> runtime;
  std::shared_ptr<CancellationManager> cancellation;
  std::shared_ptr<StatsRegistry> stats;
  Options options;    // merged pipeline options
  uint64_t seed = 0;  // the pipeline seed (options.seed, or a random one)
  uint64_t salt = 0;  // mixed into seeds; Repeat and Interleave change it
  // Prepended to node names in stats, errors and checkpoints: inner pipelines
  // of Interleave[1] are named "Interleave[1]/TFRecord[0]".
  std::string name_prefix;

  bool deterministic() const { return options.deterministic.value_or(true); }
  // The same pipeline again (a new repetition): same names, another salt.
  IteratorContext WithSalt(uint64_t extra) const;
  // An inner pipeline made by the node `owner_name` (Interleave, FlatMap; its
  // DatasetBase::name()) from its input element `index`: salted, and its
  // nodes named under this context's prefix and the owner's name.
  IteratorContext ForInner(const std::string& owner_name, uint64_t index) const;
  // Input `index` of the node `owner_name` that reads several (Zip, Concatenate,
  // SampleFromDatasets, ChooseFromDatasets). Input 0 keeps this context; a later
  // one's nodes are named under "Zip[2].1:" and draw from another seed, so that
  // siblings of one depth ("Map[1]" in both) are separate nodes in stats,
  // AUTOTUNE, errors and checkpoints, and random ops in them draw apart. A seed
  // the user gave an op (ShuffleOptions::seed) stays that op's own.
  IteratorContext ForInput(const std::string& owner_name, size_t index) const;
  // The name prefix of ForInput(owner_name, index).
  std::string InputPrefix(const std::string& owner_name, size_t index) const;
};

// Per-element randomness: every random decision about element `index` of
// node `node` is drawn from this seed, so parallel runs stay reproducible.
uint64_t MixSeed(uint64_t a, uint64_t b);
uint64_t ElementSeed(const IteratorContext& ctx, int node_position, int64_t index);

// `fn()` (a Status or StatusOr), with an exception thrown inside it returned as a status: no
// exception may leave a pipeline's thread (oneTBB aborts the process on one), and the caller's
// error handling applies. A std::bad_alloc (an image or a batch too large for this machine's
// memory) is ResourceExhausted; any other (a user's function that threw) is Unknown, with its
// what().
template <typename Fn>
auto ExceptionsAsStatus(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_array_new_length&) {
    // A negative or overflowing size: a defect, not the machine's memory.
    return absl::InternalError("an allocation of a negative or overflowing size");
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "out of memory: an allocation failed (an image or batch too large for this machine?)");
#ifdef __GLIBCXX__
  } catch (abi::__forced_unwind&) {
    throw;  // a thread's pthread_exit or cancellation: it must go on unwinding
#endif
  } catch (const std::exception& e) {
    return absl::UnknownError(absl::StrCat("a function threw a C++ exception: ", e.what(),
                                           " (pipeline functions return errors as absl::Status)"));
  } catch (...) {
    return absl::UnknownError(
        "a function threw a C++ exception that is no std::exception (pipeline functions return "
        "errors as absl::Status)");
  }
}

class IteratorBase;

class DatasetBase : public std::enable_shared_from_this<DatasetBase> {
 public:
  DatasetBase(std::string kind, std::vector<std::shared_ptr<const DatasetBase>> inputs);
  virtual ~DatasetBase() = default;

  const std::string& kind() const { return kind_; }
  // Depth in the pipeline: 0 for a source, 1 + the deepest input otherwise.
  int position() const { return position_; }
  // "Map[2]": how errors, stats and checkpoints name this node.
  const std::string& name() const { return name_; }
  const std::vector<std::shared_ptr<const DatasetBase>>& inputs() const { return inputs_; }

  virtual absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const = 0;
  // Number of elements, kInfiniteCardinality or kUnknownCardinality.
  virtual int64_t Cardinality() const { return kUnknownCardinality; }
  // Options this node sets (WithOptions), if any.
  virtual const Options* options() const { return nullptr; }
  // Appends the files this node reads (sources: ListFiles, TFRecord, TextLine, Csv), for
  // Snapshot's check that its input is unchanged.
  virtual absl::Status AppendSourceFiles(std::vector<std::string>* files) const {
    (void)files;
    return absl::OkStatus();
  }
  // The node and its parameters, e.g. "Batch(64, drop_remainder)".
  virtual std::string Describe() const { return kind_; }
  // The device this node moves its elements' tensors to, when it takes them off the host
  // (train::data::PrefetchToDevice); nullopt for the nodes that leave them where they are.
  // dataset/device_elements.h refuses a node after it that reads elements on the host.
  virtual std::optional<Device> MovesElementsTo() const { return std::nullopt; }
  // The whole pipeline up to this node, e.g. "Range(10) -> Map -> Batch(4)".
  std::string DebugString() const;
  // How many iterators of this node (as a pipeline's root) were made before: the salt of the
  // next one. Each iteration of a dataset is then like the next repetition (tf.data's
  // reshuffle_each_iteration: a seeded Shuffle gives each new iterator another, reproducible
  // order). Thread-safe.
  uint64_t NextIteration() const { return iterations_.fetch_add(1, std::memory_order_relaxed); }

  // tf.data's element_spec: what every element this node yields matches (dataset/element_spec.h).
  // Computed from the inputs' on the first call; restores check the elements they take from a
  // checkpoint against the spec of what they buffer.
  const ElementSpec& element_spec() const;
  // The spec the user declared for this node's elements (MapOptions::output_signature and the
  // like), or nullptr. IteratorBase::GetNext checks every element the node yields against it,
  // so that a function that breaks its declaration fails where it does, naming the node, and a
  // checkpoint never holds an element its spec refuses.
  const ElementSpec* output_signature() const {
    return output_signature_.known() ? &output_signature_ : nullptr;
  }

 protected:
  // For the ops whose elements a function makes, from their constructors: what the user declared
  // (unknown: nothing).
  void DeclareOutputSignature(ElementSpec signature) { output_signature_ = std::move(signature); }
  // What element_spec() returns. The default, the declared signature (or unknown), suits the
  // nodes whose elements a function makes; the others compute theirs from their inputs'.
  virtual ElementSpec ComputeElementSpec() const { return output_signature_; }

 private:
  std::string kind_;
  std::vector<std::shared_ptr<const DatasetBase>> inputs_;
  int position_;
  std::string name_;
  ElementSpec output_signature_;
  // Immutable once computed, and computed once: several iterators may ask at the same time.
  mutable absl::once_flag element_spec_once_;
  mutable ElementSpec element_spec_;
  mutable std::atomic<uint64_t> iterations_{0};
};

// What IteratorBase::WaitForNext found.
enum class NextReadiness {
  kReady,    // GetNext returns at once
  kNotYet,   // the deadline passed first
  kUnknown,  // the node cannot wait for its next element without taking it
};

// Produces the elements of one DatasetBase. Not thread-safe: one consumer at
// a time (the user-facing Iterator adds the lock). An error is returned once
// and the iterator may continue after it (IgnoreErrors relies on that); the
// user-facing Iterator makes errors sticky.
class IteratorBase {
 public:
  IteratorBase(const DatasetBase* dataset, const IteratorContext& ctx, NodeKind kind);
  virtual ~IteratorBase() = default;
  IteratorBase(const IteratorBase&) = delete;
  IteratorBase& operator=(const IteratorBase&) = delete;

  // The next element, std::nullopt at the end. Counts the element in this
  // node's stats and names this node in errors that originate here.
  absl::StatusOr<std::optional<Element>> GetNext();

  // Saves the position (and any buffered elements) so that Restore on a fresh
  // iterator of the same dataset resumes exactly.
  absl::Status Save(proto::IteratorStateProto* state);
  // Called on a fresh iterator, before any GetNext.
  absl::Status Restore(const proto::IteratorStateProto& state);

  // Appends the source of the element the last GetNext returned (dataset/element_source.h): the
  // integers that recompute it. False when this node, or one below it, cannot recompute its
  // elements; what it appended is then to be dropped. Call it right after that GetNext.
  bool DescribeLast(ElementSource* out) { return DescribeLastInternal(out); }
  // Waits until GetNext would return at once, without waiting for another thread (a buffered
  // element, error or end is at hand), or until `deadline`. kUnknown where the node cannot tell
  // (the default). Called by the consumer, as GetNext is; kReady holds until its next call.
  // An async node counts the wait in its wait_ns, as GetNext's, so that AUTOTUNE sees a consumer
  // waiting here as waiting, not as the consumer's own work.
  NextReadiness WaitForNext(std::chrono::steady_clock::time_point deadline);
  // The element `source` describes, exactly as GetNext returned it then. Called only while
  // restoring, before this iterator's first GetNext (no worker of it runs yet); the position does
  // not move. Errors name this node; a file changed since is DataLoss naming it.
  absl::StatusOr<Element> Recompute(SourceCursor& source);

  const DatasetBase* dataset() const { return dataset_; }
  const IteratorContext& ctx() const { return ctx_; }
  // The node's name with the context's prefix: "Interleave[1]/Map[1]".
  const std::string& name() const { return name_; }
  NodeStats& stats() { return *stats_; }
  // Elements this node has returned (its output index).
  int64_t produced() const { return produced_; }

  // For nodes and their helpers (SavedDatasetReader) saving the iterators they read from.
  // Saves or restores an input iterator into state->inputs (absent inputs,
  // e.g. an exhausted Repeat input, are recorded as such).
  static absl::Status SaveInput(IteratorBase* input, proto::IteratorStateProto* state);
  // Returns the saved state of input `i`, or nullptr if it was absent.
  static absl::StatusOr<const proto::IteratorStateProto*> InputState(
      const proto::IteratorStateProto& state, int i);
  // Restores `input` from the state of input `i`; one saved as absent leaves it as it is.
  static absl::Status RestoreInput(IteratorBase* input, const proto::IteratorStateProto& state,
                                   int i = 0);
  // Reads back a buffered result that BufferedToProto saved; an element saved as a source is
  // recomputed by `input` (restored but not started), and the source is returned in `source`
  // (cleared otherwise).
  static absl::StatusOr<absl::StatusOr<std::optional<Element>>> BufferedFromProto(
      const proto::BufferedResult& proto, IteratorBase* input, ElementSource* source);

  // DataLoss naming this node (its name and Describe()) and the component unless `element`, which
  // a checkpoint put in one of its buffers, matches `spec`: the spec of what that buffer holds
  // (this node's elements, or its input's). A corrupt or crafted checkpoint must not hand the
  // pipeline's functions elements of another type than the ones it produces. Errors and the end
  // marker pass.
  absl::Status CheckRestored(const Element& element, const ElementSpec& spec) const;
  absl::Status CheckRestored(const absl::StatusOr<std::optional<Element>>& result,
                             const ElementSpec& spec) const;
  // ElementFromProto and BufferedFromProto, then CheckRestored.
  absl::StatusOr<Element> RestoreElement(const proto::ElementProto& proto,
                                         const ElementSpec& spec) const;
  absl::StatusOr<absl::StatusOr<std::optional<Element>>> RestoreBuffered(
      const proto::BufferedResult& proto, IteratorBase* input, ElementSource* source,
      const ElementSpec& spec) const;

 protected:
  virtual absl::StatusOr<std::optional<Element>> GetNextInternal() = 0;
  virtual absl::Status SaveInternal(proto::IteratorStateProto* state) = 0;
  virtual absl::Status RestoreInternal(const proto::IteratorStateProto& state) = 0;
  // Nodes whose elements a source can recompute override both: the ones that read files or
  // tensors by position, the ones that compute each element from one input element and an index
  // (Map), and the ones that pass their input's elements on (Shuffle, Prefetch, Repeat, Batch).
  virtual bool DescribeLastInternal(ElementSource* out) {
    (void)out;
    return false;
  }
  virtual absl::StatusOr<Element> RecomputeInternal(SourceCursor& source);
  virtual NextReadiness WaitForNextInternal(std::chrono::steady_clock::time_point deadline) {
    (void)deadline;
    return NextReadiness::kUnknown;
  }

  // Whether this node's buffers save elements as their sources where the input can describe
  // them (Options::checkpoint_sources, true unless set to false).
  bool SavesSources() const { return ctx_.options.checkpoint_sources.value_or(true); }
  // The source of the element `input`'s GetNext just returned; empty when it has none or
  // SavesSources() is false. What a buffering node keeps beside each element it buffers.
  ElementSource SourceOfLast(IteratorBase& input) const {
    ElementSource source;
    if (SavesSources() && !input.DescribeLast(&source)) source.clear();
    return source;
  }
  // Whether BufferedToProto saves `result` as `source` (not whole).
  bool SavesAsSource(const absl::StatusOr<std::optional<Element>>& result,
                     const ElementSource& source) const {
    return result.ok() && result->has_value() && !source.empty() && SavesSources();
  }
  // A buffered result for a checkpoint: as `source` when it is an element with a non-empty
  // source (and SavesSources()), whole otherwise.
  void BufferedToProto(const absl::StatusOr<std::optional<Element>>& result,
                       const ElementSource& source, proto::BufferedResult* out) const;

  // Prefixes `status` with this node's name and `element_index`
  // ("Map[2] at element 1234: ..."), once: an error already named by a
  // deeper node passes through unchanged.
  absl::Status Annotate(const absl::Status& status, int64_t element_index) const;
  // "<name> wait", interned on first use: the profiler's span for a consumer waiting on this
  // node's workers (Prefetch, parallel Map, Interleave and TFRecord), so that the wait is not
  // counted as the node's own work.
  const char* WaitSpanName();

  // Async nodes time their own work on their threads; GetNext then counts
  // the caller's time as waiting, not busy.
  bool async() const { return kind_ == NodeKind::kAsync || kind_ == NodeKind::kInterleave; }

  // Takes `ns` of this thread's time in the current GetNextInternal out of the node's own
  // time: work counted elsewhere, such as a parallel Map's call that its consumer ran
  // itself (busy time, not waiting).
  static void ExcludeFromOwnTime(int64_t ns);

 private:
  const DatasetBase* dataset_;
  const ElementSpec* output_signature_;  // dataset_->output_signature()
  IteratorContext ctx_;
  std::string name_;
  NodeKind kind_;
  std::shared_ptr<NodeStats> stats_;
  int64_t produced_ = 0;
  const char* span_name_ = nullptr;  // name_ interned for the profiler, on its first span
  const char* wait_span_name_ = nullptr;
};

// Time spent in a scope, added to a counter (busy_ns).
class ScopedTimer {
 public:
  explicit ScopedTimer(std::atomic<int64_t>* counter)
      : counter_(counter), start_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    counter_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start_)
                            .count(),
                        std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t>* counter_;
  std::chrono::steady_clock::time_point start_;
};

// Reads a saved integer, with a clear error when the checkpoint lacks it.
absl::StatusOr<int64_t> SavedInt(const proto::IteratorStateProto& state, const std::string& key);

// True for the end of the sequence: an OK result with no element.
inline bool IsEndOfSequence(const absl::StatusOr<std::optional<Element>>& result) {
  return result.ok() && !result->has_value();
}

// Element <-> protobuf, for checkpoints of buffered elements and file caches.
void ElementToProto(const Element& element, proto::ElementProto* out);
// `element` as one record of a file that TFRecordReader reads back with its default
// max_record_bytes (1 GiB): ResourceExhausted, before any copy, for an element whose values
// alone are larger, or whose serialized form is (protobuf writes at most 2 GiB, and past that an
// empty string that would read back as an element of no components). `what` names the writer.
absl::Status SerializeElementRecord(const Element& element, absl::string_view what,
                                    std::string* record);
absl::StatusOr<Element> ElementFromProto(const proto::ElementProto& proto);
// ElementFromProto of a serialized ElementProto, without building the message: each value is
// copied once, from `bytes` into its tensor (a Snapshot reads decoded images this way), whose
// memory comes from `pool` for values of 64 KB and more when there is one. Malformed bytes are a
// DataLoss error naming the byte offset.
absl::StatusOr<Element> ElementFromSerialized(absl::string_view bytes, BufferPool* pool = nullptr);
// A buffered element or error, as saved in checkpoints.
void ResultToProto(const absl::StatusOr<std::optional<Element>>& result,
                   proto::BufferedResult* out);
absl::StatusOr<absl::StatusOr<std::optional<Element>>> ResultFromProto(
    const proto::BufferedResult& proto);

}  // namespace sluice

#endif  // SLUICE_DATASET_DATASET_BASE_H_
