// libFuzzer target: Iterator::Restore from an arbitrary checkpoint, for a pipeline that uses
// every op that keeps a position (sources, Map and Interleave both sequential and parallel,
// Filter, FlatMap, Cache in memory and in a file, Shuffle, Batch, PaddedBatch, Unbatch, Prefetch,
// Repeat, Take, Skip, Shard, Zip, Concatenate, Enumerate, Scan, GroupByWindow, Window, Snapshot,
// IgnoreErrors, SampleFromDatasets, ChooseFromDatasets, ListFiles and TFRecord).
//
// When a checkpoint restores, the iterator reads on; a checkpoint saved from there and restored
// into a fresh iterator must then yield exactly what the first one yields next.
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes genuine checkpoints taken at a few
// positions into DIR (tools/fuzz.sh does so into each run's working corpus). Checkpoints taken
// while the file Cache replays name its file's random id, so the committed ones restore only where
// that file was written; the fresh ones always do.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

// The pipeline names its files, and a checkpoint names the pipeline: the same paths in every run.
std::string InDir(absl::string_view name) {
  return fuzz::StableScratchDir("iterator_restore") + "/" + std::string(name);
}

// Component i as an int64, or 7 when it is not one. A fuzzed checkpoint can put elements of any
// type in a node's buffers, and Restore does not check them against the types the pipeline
// produces (docs/reliability.md, "Findings"): this pipeline's functions must not assume.
int64_t Value(const Element& e, size_t i = 0) {
  if (i >= e.size() || e[i].dtype() != DType::kInt64 || e[i].num_elements() < 1) return 7;
  return e[i].data<int64_t>()[0];
}
// a + b, wrapping: a fuzzed checkpoint can buffer values near the int64 limits.
int64_t Add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

Element Int(int64_t v) { return {Tensor::Scalar<int64_t>(v)}; }

// Two small TFRecord files of records "r<i>" of growing length.
std::string MakeFiles() {
  for (int f = 0; f < 2; ++f) {
    std::string bytes;
    for (int i = 0; i < 7 + 3 * f; ++i) fuzz::AppendRecord(std::string(1 + i + f, 'r'), &bytes);
    fuzz::WriteFileOrDie(InDir(absl::StrCat("part-", f, ".tfrecord")), bytes);
  }
  return InDir("*.tfrecord");
}

Dataset Pipeline() {
  const std::string pattern = MakeFiles();
  Dataset a = Dataset::Range(0, 400).Shard(2, 1).Skip(2).Take(150).Filter(
      [](const Element& e) -> absl::StatusOr<bool> { return Value(e) % 3 != 0; });
  Dataset b = Dataset::ListFiles(pattern, {.shuffle = true, .seed = 3})
                  .Interleave([](const std::string& f) { return Dataset::TFRecord(f); },
                              {.cycle_length = 2, .block_length = 2, .num_parallel_calls = 2})
                  .Map([](Element e) -> absl::StatusOr<Element> {
                    if (e.empty() || e[0].dtype() != DType::kBytes || e[0].num_elements() != 1) {
                      return absl::InvalidArgumentError("not a record");
                    }
                    return Int(static_cast<int64_t>(e[0].scalar<std::string>().size()));
                  })
                  .Cache(InDir("b.cache"))
                  // Finite: behind IgnoreErrors, an endless branch whose restored buffers make
                  // every element fail would never end (as in tf.data).
                  .Repeat(20);
  std::vector<int64_t> slices(30);
  for (int i = 0; i < 30; ++i) slices[i] = i * i;
  Dataset c = Dataset::FromTensorSlices({Tensor::FromVector(slices)})
                  .Repeat(3)
                  .Snapshot(InDir("c.snapshot"), {.num_shards = 2})
                  .Enumerate()
                  .Map([](Element e) -> absl::StatusOr<Element> {
                    return Int(Add(Value(e), Value(e, 1)));
                  });
  Dataset d = Dataset::SampleFromDatasets({a, b}, {0.6, 0.4}, {.seed = 1});
  Dataset e =
      Dataset::ChooseFromDatasets({c, Dataset::Range(20).Cache()},
                                  Dataset::Range(300).Map([](Element x) -> absl::StatusOr<Element> {
                                    return Int(Value(x) % 2);
                                  }),
                                  {.stop_on_empty_dataset = false});
  return Dataset::Zip({d, e})
      .Map([](Element x) -> absl::StatusOr<Element> { return Int(Add(Value(x), Value(x, 1))); },
           {.num_parallel_calls = 2})
      .FlatMap(
          [](Element x) -> absl::StatusOr<Dataset> { return Dataset::Range(Value(x) % 3 + 1); })
      .Scan(Int(0),
            [](Element state, Element x) -> absl::StatusOr<std::pair<Element, Element>> {
              const int64_t s = Add(Value(state), Value(x));
              return std::make_pair(Int(s), Int(s % 1000));
            })
      .GroupByWindow([](const Element& x) -> absl::StatusOr<int64_t> { return Value(x) % 3; },
                     [](int64_t, Dataset window) -> absl::StatusOr<Dataset> { return window; }, 2)
      .Concatenate(Dataset::Range(5))
      .Shuffle(8, {.seed = 7})
      .Window(3, {.shift = 2})
      .Unbatch()
      .Batch(4)
      .Unbatch()
      .PaddedBatch(3)
      .Prefetch(2)
      .IgnoreErrors()
      .Repeat(2);
}

using Results = std::vector<std::pair<absl::Status, std::optional<int64_t>>>;

// The next n results: each a status and, for an element, its first value.
Results Read(Iterator* it, int n) {
  Results out;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    if (!next.ok()) {
      out.emplace_back(next.status(), std::nullopt);
      break;
    }
    if (!next->has_value()) {
      out.emplace_back(absl::OkStatus(), std::nullopt);
      break;
    }
    out.emplace_back(absl::OkStatus(), Value(**next));
  }
  return out;
}

const Dataset& TheDataset() {
  static const Dataset* dataset = [] {
    auto* d = new Dataset(Pipeline());
    // One complete pass writes the file cache, so that every run below reads it.
    std::unique_ptr<Iterator> it = d->MakeIterator();
    while (true) {
      absl::StatusOr<std::optional<Element>> next = it->GetNext();
      if (!next.ok()) std::abort();
      if (!next->has_value()) break;
    }
    return d;
  }();
  return *dataset;
}

void WriteSeeds(const std::string& dir) {
  std::unique_ptr<Iterator> it = TheDataset().MakeIterator();
  int at = 0;
  for (int stop : {0, 1, 5, 17, 60, 200}) {
    (void)Read(it.get(), stop - at);
    at = stop;
    absl::StatusOr<std::string> saved = it->Save();
    if (!saved.ok()) std::abort();
    fuzz::WriteFileOrDie(absl::StrCat(dir, "/at-", stop), *saved);
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Parse failures are expected by the thousand; protobuf would log each one.
  google::protobuf::SetLogHandler(nullptr);
  (void)sluice::TheDataset();
  if (const char* dir = std::getenv("SLUICE_FUZZ_SEEDS")) sluice::WriteSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string checkpoint(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Iterator> it = TheDataset().MakeIterator();
  if (!it->Restore(checkpoint).ok()) return 0;
  const Results first = Read(it.get(), 10);
  for (const auto& r : first) {
    if (!r.first.ok() || !r.second.has_value()) return 0;  // ended or failed: nothing to resume
  }
  absl::StatusOr<std::string> saved = it->Save();
  if (!saved.ok()) return 0;
  const Results expected = Read(it.get(), 8);
  std::unique_ptr<Iterator> resumed = TheDataset().MakeIterator();
  Check(resumed->Restore(*saved).ok());
  Check(Read(resumed.get(), 8) == expected);
  return 0;
}
