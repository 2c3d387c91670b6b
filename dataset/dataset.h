#ifndef SLUICE_DATASET_DATASET_H_
#define SLUICE_DATASET_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/element.h"
#include "dataset/element_spec.h"
#include "dataset/options.h"
#include "io/compression.h"
#include "io/tfrecord_reader.h"

namespace sluice {

class DatasetBase;
class Dataset;
class Iterator;

// What a function inside Map learns about the element it is given: its index
// in the Map's input and a seed for any randomness. Draw random numbers from
// `seed` (not a global generator) and parallel runs stay reproducible.
struct ElementContext {
  int64_t index = 0;
  uint64_t seed = 0;
};

using MapFn = std::function<absl::StatusOr<Element>(Element, const ElementContext&)>;
using SimpleMapFn = std::function<absl::StatusOr<Element>(Element)>;
using PredicateFn = std::function<absl::StatusOr<bool>(const Element&)>;
// Scan's function: (state, element) -> (new state, output element).
using ScanFn = std::function<absl::StatusOr<std::pair<Element, Element>>(Element, Element)>;
using DatasetFn = std::function<absl::StatusOr<Dataset>(Element)>;
// GroupByWindow's functions: an element's group, a group's window size, and what a full window
// (a dataset of its elements, in input order) becomes.
using KeyFn = std::function<absl::StatusOr<int64_t>(const Element&)>;
using WindowSizeFn = std::function<absl::StatusOr<int64_t>(int64_t key)>;
using ReduceFn = std::function<absl::StatusOr<Dataset>(int64_t key, Dataset window)>;
// Save and Snapshot: an element's shard id (>= 0); Load and Snapshot: the shards (each a
// dataset of its elements, in shard order) combined into one.
using ShardFn = KeyFn;
using ReaderFn = std::function<absl::StatusOr<Dataset>(std::vector<Dataset> shards)>;
// Yields the next element, or std::nullopt at the end.
using Generator = std::function<absl::StatusOr<std::optional<Element>>()>;

// ListFiles(patterns, options), like tf.data.Dataset.list_files: shuffled by default, as there.
struct ListFilesOptions {
  bool shuffle = true;           // false: sorted bytewise
  std::optional<uint64_t> seed;  // unset: the pipeline seed
};

struct TFRecordOptions {
  std::optional<Compression> compression;  // unset: guessed from each file's suffix
  size_t buffer_size = 256 << 10;
  int num_parallel_reads = 1;  // > 1 (or kAutotune) reads files in parallel, interleaved
  bool skip_corrupt = false;   // skip corrupt records, counting them
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;  // see TFRecordReaderOptions
  // With skip_corrupt: sees each skipped record's error (file, record, offset, what is wrong) as
  // it is skipped (every pass over the file meets it again, and so does the restore of a
  // compressed file, which reads forward to its position; an uncompressed one seeks past it), on
  // the thread reading the file: thread-safe and quick, as IgnoreErrors' on_error.
  std::function<void(const absl::Status&)> on_skipped;
  // Elements {record, index}: the record and its int64 index in its file as the reader counts
  // records (skipped ones included, so that a later error names the record the reader's own
  // messages do; exact across a checkpoint's restore, which a counting Enumerate is not). Reads
  // the files one at a time: num_parallel_reads must be 1.
  bool with_index = false;
};

// TextLine(files, options), like tf.data.TextLineDataset.
struct TextLineOptions {
  std::optional<Compression> compression;  // unset: guessed from each file's suffix
  int64_t skip_header_lines = 0;           // lines dropped at the start of every file
  uint64_t max_line_bytes = 64 << 20;      // a longer line is DataLoss naming it, then skipped
  size_t buffer_size = 256 << 10;
  // > 1 (or kAutotune) reads that many files at once, a line from each in turn, as tf.data's
  // TextLineDataset(num_parallel_reads): a deterministic parallel Interleave of one TextLine per
  // file. 1 reads the files one after the other.
  int num_parallel_reads = 1;
};

// Csv(files, record_defaults, options), like tf.data.experimental.CsvDataset.
struct CsvOptions {
  std::optional<Compression> compression;  // unset: guessed from each file's suffix
  bool header = false;                     // the first line of every file names the columns
  char field_delim = ',';
  bool use_quote_delim = true;       // a field in "..." may hold the delimiter; "" in it is a quote
  std::string na_value;              // a field equal to it is missing (non-empty to apply)
  std::vector<int64_t> select_cols;  // the columns to keep, ascending; empty: every column
  // 0: one element per record, a scalar per column (CsvDataset). N > 0: up to N records per
  // element, a [n] tensor per column, as Csv(...).Batch(N) but parsed straight into the columns
  // (tf.data's make_csv_dataset batches so too); several times faster.
  int64_t batch_size = 0;
  uint64_t max_line_bytes = 64 << 20;
  size_t buffer_size = 256 << 10;
};

// Window(size, options), like tf.data's window.
struct WindowOptions {
  std::optional<int64_t> shift;  // input elements between window starts; unset: size
  int64_t stride = 1;            // input elements between a window's elements
  bool drop_remainder = false;   // drop the last windows when shorter than size
};

// BucketBySequenceLength(length_fn, boundaries, batch_sizes, options), like
// tf.data.experimental.bucket_by_sequence_length.
struct BucketOptions {
  // One shape per component; -1 pads that dimension to the batch's longest, or to the bucket's
  // boundary - 1 with pad_to_bucket_boundary. Empty: every dimension pads to the longest, except
  // that pad_to_bucket_boundary pads the first dimension of every non-scalar component.
  std::vector<std::vector<int64_t>> padded_shapes;
  std::vector<Tensor> padding_values;  // one scalar per component; empty: zeros
  // Pads to the bucket's boundary - 1 instead of the batch's longest, so every batch of a bucket
  // has one shape; an element as long as the last boundary or longer is then an error.
  bool pad_to_bucket_boundary = false;
  bool no_padding = false;  // Batch instead of PaddedBatch: a bucket's elements agree in shape
  bool drop_remainder = false;
};

// Dataset::Save(path, options), like tf.data's save.
struct SaveOptions {
  Compression compression = Compression::kNone;
  // 0: the machine's cores. Elements go to the shards round-robin, and Load's default reader
  // reads them round-robin: Load gives the elements back in their order.
  int num_shards = 0;
  ShardFn shard_fn;  // set: element -> shard id, instead of round-robin
  // Called between elements, at most every check_interval_seconds; an error it returns ends the
  // save with that error, before the manifest (Python's save: Ctrl-C).
  std::function<absl::Status()> check;
  double check_interval_seconds = 0.05;
};

// Dataset::Load(path, options), like tf.data's load.
struct LoadOptions {
  ReaderFn reader_fn;  // unset: the shards round-robin, read in parallel
  // Set: the dataset's element_spec, without reading `path` (tf.data's load(element_spec=)); the
  // saved elements' must be compatible. Unset: read from the save's manifest when element_spec()
  // is first asked (unknown when nothing is saved there yet, or it was saved by a version that
  // did not record it).
  std::optional<ElementSpec> element_spec;
};

// Snapshot(path, options), like tf.data's snapshot.
struct SnapshotOptions {
  Compression compression = Compression::kNone;
  int num_shards = 0;  // as SaveOptions
  ShardFn shard_fn;
  ReaderFn reader_fn;
  // Non-empty: the snapshot is reused exactly when it was written with this fingerprint. Empty:
  // when the pipeline's description and its input files (paths, sizes, modification times)
  // are unchanged. A change inside a function (a Map's code) is invisible to the latter: bump
  // a fingerprint of one's own for those.
  std::string fingerprint;
};

struct MapOptions {
  int num_parallel_calls = 1;         // or kAutotune
  std::optional<bool> deterministic;  // unset: the pipeline's option
  // What fn returns, e.g. {{DType::kFloat32, {224, 224, 3}}, {DType::kInt64, {}}}: the Map's
  // element_spec, which tf.data learns by tracing fn and sluice cannot. Every element fn returns
  // is checked against it (InvalidArgument in the element's place otherwise). Unset (unknown):
  // the Map's elements, and those of the ops after it that pass them on, may be anything.
  ElementSpec output_signature;
};

struct InterleaveOptions {
  int cycle_length = kAutotune;
  int block_length = 1;
  int num_parallel_calls = 1;  // 1: sequential; > 1 or kAutotune: parallel
  std::optional<bool> deterministic;
  ElementSpec output_signature;  // what fn's datasets yield; as MapOptions'
};

struct ShuffleOptions {
  std::optional<uint64_t> seed;  // unset: the pipeline seed
  bool reshuffle_each_iteration = true;
};

struct SampleOptions {
  std::optional<uint64_t> seed;  // unset: the pipeline seed
  // true: end at the first input that ends; false (tf.data's default): go on drawing from the
  // others, their weights renormalised.
  bool stop_on_empty_dataset = false;
};

struct ChooseOptions {
  // true (tf.data's default): end when a chosen input has ended; false: skip that choice.
  bool stop_on_empty_dataset = true;
};

struct BatchOptions {
  bool drop_remainder = false;
  int num_parallel_calls = 1;  // > 1 copies components into the batch in parallel
};

struct PaddedBatchOptions {
  // One shape per component; -1 pads that dimension to the batch's longest.
  // Empty: every dimension pads to the longest.
  std::vector<std::vector<int64_t>> padded_shapes;
  // One scalar per component; empty: zeros (empty strings).
  std::vector<Tensor> padding_values;
  bool drop_remainder = false;
};

// An immutable description of a pipeline. Each method returns a new Dataset
// that reads this one; the names follow tf.data.
class Dataset {
 public:
  explicit Dataset(std::shared_ptr<const DatasetBase> base) : base_(std::move(base)) {}

  // Sources.
  static Dataset Range(int64_t stop);
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  static Dataset FromTensors(Element element);
  static Dataset FromTensorSlices(Element element);
  // `make` is called once per iterator and returns that iterator's generator, whose elements
  // match `output_signature` when one is given (as tf.data's from_generator; unknown otherwise).
  static Dataset FromGenerator(std::function<Generator()> make, ElementSpec output_signature = {});
  static Dataset ListFiles(std::vector<std::string> patterns, ListFilesOptions options = {});
  static Dataset ListFiles(std::string pattern, ListFilesOptions options = {});
  // Records of the files in order, each a scalar bytes tensor.
  static Dataset TFRecord(std::vector<std::string> files, TFRecordOptions options = {});
  static Dataset TFRecord(std::string file, TFRecordOptions options = {});
  // tf.data.TextLineDataset: each line of the files in order as a scalar string, without its
  // "\n" or "\r\n" (the last line needs none; an empty line is an empty string). The files are
  // read one after the other; GZIP and ZLIB ones are inflated as they are read. An error comes in
  // the file's turn: a line longer than max_line_bytes is skipped and the file goes on; any other
  // (a missing or unreadable file) ends that file. IgnoreErrors goes on past either. A checkpoint
  // holds the file, line and byte offset: an uncompressed file seeks back to it, a compressed one
  // is read forward and checked.
  static Dataset TextLine(std::vector<std::string> files, TextLineOptions options = {});
  static Dataset TextLine(std::string file, TextLineOptions options = {});
  // tf.data.experimental.CsvDataset: each line of the files is a record, one scalar per column
  // (per select_cols entry when given) of the dtype of its record_defaults entry: int32, int64,
  // float32 or bytes. That entry is a scalar, the value of an empty (or na_value) field, or an
  // empty tensor, which makes the column required. A record with the wrong number of fields, a
  // value that does not parse, a missing required field or an unclosed quote is InvalidArgument
  // naming the file, line and column, in that record's place (the file goes on, so IgnoreErrors
  // skips just the record). Quoted fields cannot span lines. Checkpoints as TextLine's.
  static Dataset Csv(std::vector<std::string> files, std::vector<Tensor> record_defaults,
                     CsvOptions options = {});
  static Dataset Zip(std::vector<Dataset> datasets);
  // tf.data.Dataset.sample_from_datasets: each element from input i with probability
  // weights[i] / sum(weights), drawn from the seed and the element's index (reproducible, and
  // exact across checkpoints).
  static Dataset SampleFromDatasets(std::vector<Dataset> datasets, std::vector<double> weights,
                                    SampleOptions options = {});
  // tf.data.Dataset.choose_from_datasets: element k from input choice[k], `choice` yielding
  // int64 scalars in [0, datasets.size()).
  static Dataset ChooseFromDatasets(std::vector<Dataset> datasets, Dataset choice,
                                    ChooseOptions options = {});

  // Transformations.
  Dataset Map(MapFn fn, MapOptions options = {}) const;
  Dataset Map(SimpleMapFn fn, MapOptions options = {}) const;
  Dataset Filter(PredicateFn predicate) const;
  // `output_signature`: what fn's datasets yield, as MapOptions::output_signature.
  Dataset FlatMap(DatasetFn fn, ElementSpec output_signature = {}) const;
  Dataset Interleave(DatasetFn fn, InterleaveOptions options = {}) const;
  Dataset Interleave(std::function<Dataset(const std::string&)> fn,
                     InterleaveOptions options = {}) const;
  // In memory when `path` is empty, else in files at `path` (used only once
  // completely written).
  Dataset Cache(std::string path = "") const;
  Dataset Shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  Dataset Batch(int64_t batch_size, BatchOptions options = {}) const;
  Dataset PaddedBatch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  Dataset Unbatch() const;
  // tf.data's rebatch: the rows of the input batches in batches of `batch_size` (the last one
  // shorter unless drop_remainder), every component split along its first dimension.
  Dataset Rebatch(int64_t batch_size, bool drop_remainder = false) const;
  // tf.data's window(size, shift, stride, drop_remainder), each window's elements stacked along a
  // new first dimension: what window(...).flat_map(lambda w: w.batch(size)) gives in tf.data,
  // whose windows are datasets. Window k holds input elements k*shift + i*stride, i < size; the
  // windows near the end are shorter (dropped with drop_remainder). Elements of one window must
  // agree in dtypes and shapes. A checkpoint holds the elements a later window still needs.
  Dataset Window(int64_t size, WindowOptions options = {}) const;
  // tf.data's group_by_window: elements gathered by key_fn(element) into groups; a group that
  // reaches window_size elements is handed to reduce_fn(key, window) and the elements of the
  // dataset it returns are emitted. At the end of the input the remaining groups are reduced in
  // ascending key order. Memory: up to window_size - 1 elements per key seen. A checkpoint holds
  // the groups' elements and the open window; reduce_fn is called again at restore, so it must
  // be deterministic. `output_signature`: what reduce_fn's datasets yield, as
  // MapOptions::output_signature.
  Dataset GroupByWindow(KeyFn key_fn, ReduceFn reduce_fn, int64_t window_size,
                        ElementSpec output_signature = {}) const;
  Dataset GroupByWindow(KeyFn key_fn, ReduceFn reduce_fn, WindowSizeFn window_size_fn,
                        ElementSpec output_signature = {}) const;
  // tf.data.experimental.bucket_by_sequence_length: element e goes to bucket i, the first with
  // length_fn(e) < bucket_boundaries[i] (the last bucket: at least the last boundary), and
  // bucket i is padded-batched by bucket_batch_sizes[i] (which has one more entry than the
  // boundaries). A GroupByWindow keyed by bucket.
  Dataset BucketBySequenceLength(KeyFn length_fn, std::vector<int64_t> bucket_boundaries,
                                 std::vector<int64_t> bucket_batch_sizes,
                                 BucketOptions options = {}) const;
  // tf.data's snapshot: the first pass writes the input's elements to `path` as it yields them;
  // later passes (this run or the next) read them back instead of computing the input. A
  // snapshot of another pipeline, or of changed input files, is rewritten, saying why on
  // stderr; a half-written one (an interrupted pass) is never read. Layout as Save's.
  Dataset Snapshot(std::string path, SnapshotOptions options = {}) const;
  // tf.data's save: writes every element to the directory `path` (shard files, then a manifest
  // last, atomically): an error or a crash part-way leaves what was there before.
  absl::Status Save(const std::string& path, SaveOptions options = {}) const;
  // tf.data's load: the elements Save wrote to `path`, and the element_spec it recorded.
  static Dataset Load(std::string path, LoadOptions options = {});
  // buffer_size 0 is no prefetch (this dataset), as tf.data's prefetch(0).
  Dataset Prefetch(int64_t buffer_size = kAutotune) const;
  // count < 0: forever.
  Dataset Repeat(int64_t count = -1) const;
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;
  Dataset Shard(int64_t num_shards, int64_t index) const;
  Dataset Zip(Dataset other) const;
  Dataset Concatenate(Dataset other) const;
  // Prepends an int64 scalar counter component.
  Dataset Enumerate(int64_t start = 0) const;
  // tf.data.Dataset.scan: carries a state through the elements, fn(state, element) giving the
  // next state and the output. The state is checkpointed with the position. `output_signature`:
  // what the outputs are, as MapOptions::output_signature.
  Dataset Scan(Element initial_state, ScanFn fn, ElementSpec output_signature = {}) const;
  // Drops elements whose production failed, counting them (the `skipped`
  // count of this node in Iterator::Stats). `on_error`, when set, sees each
  // dropped error (tf.data's log_warning): for a message or a count of one's
  // own. It runs on whichever thread pulls from this node, so it must be
  // thread-safe, and quick.
  Dataset IgnoreErrors(std::function<void(const absl::Status&)> on_error = nullptr) const;
  Dataset WithOptions(Options options) const;

  // A fresh iterator. Creation errors (a missing file, ...) are reported by
  // the first GetNext.
  std::unique_ptr<Iterator> MakeIterator() const;
  // kInfiniteCardinality (-1), kUnknownCardinality (-2), or the count.
  int64_t Cardinality() const;
  // "Range(0, 10, 1) -> Map -> Batch(4)".
  std::string DebugString() const;
  // tf.data's element_spec: one TensorSpec (dtype, shape with unknown dimensions) per component
  // of every element; unknown below a function whose output nobody declared
  // (dataset/element_spec.h).
  ElementSpec element_spec() const;
  const std::shared_ptr<const DatasetBase>& base() const { return base_; }

 private:
  std::shared_ptr<const DatasetBase> base_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_DATASET_H_
