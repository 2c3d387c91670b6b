// libFuzzer target: Iterator::Restore from an arbitrary checkpoint, for a pipeline that uses
// every op that keeps a position (sources, Map and Interleave both sequential and parallel,
// Filter, FlatMap, Cache in memory and in a file, Shuffle, Batch, PaddedBatch, Unbatch, Prefetch,
// Repeat, Take, Skip, Shard, Zip, Concatenate, Enumerate, Scan, GroupByWindow, Window, Snapshot,
// IgnoreErrors, SampleFromDatasets, ChooseFromDatasets, ListFiles and TFRecord).
//
// When a checkpoint restores, the iterator reads on; a checkpoint saved from there and restored
// into a fresh iterator must then yield exactly what the first one yields next.
//
// Every function of the pipeline declares what it returns (int64 scalars; records in one branch),
// so that every element_spec is known and every buffer a checkpoint fills is type-checked on
// restore. The functions check what they are handed and abort otherwise: an element of another
// type that a restore let through to them is a finding. (Scan's state is the exception: a
// restore does not check it, as its type may change from call to call; its function copes.)
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes genuine checkpoints taken at a few
// positions into DIR (tools/fuzz.sh does so into each run's working corpus), and beside each the
// same checkpoint with one buffered element per node replaced by one of another type, which a
// restore must refuse with DataLoss (checked there: a restore that takes one is a finding).
// Checkpoints taken while the file Cache replays name its file's random id, so the committed ones
// restore only where that file was written; the fresh ones always do.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/iterator.h"
#include "dataset/proto/iterator_state.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

// The pipeline names its files, and a checkpoint names the pipeline: the same paths in every run.
std::string InDir(absl::string_view name) {
  return fuzz::StableScratchDir("iterator_restore") + "/" + std::string(name);
}

const ElementSpec kInt64{{DType::kInt64, {}}};
const ElementSpec kRecord{{DType::kBytes, {}}};

// Component i, which must be an int64 scalar: every element a function of this pipeline is handed
// is one (the record Map's excepted), and a restore must not make it otherwise.
int64_t IntAt(const Element& e, size_t i = 0) {
  Check(i < e.size() && e[i].dtype() == DType::kInt64 && e[i].rank() == 0);
  return e[i].scalar<int64_t>();
}
// The first value of component i if it is an int64 tensor, or 7: for what a restore does not
// check (Scan's state) and the pipeline's output.
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
      [](const Element& e) -> absl::StatusOr<bool> { return IntAt(e) % 3 != 0; });
  Dataset b = Dataset::ListFiles(pattern, {.shuffle = true, .seed = 3})
                  .Interleave([](const std::string& f) { return Dataset::TFRecord(f); },
                              {.cycle_length = 2,
                               .block_length = 2,
                               .num_parallel_calls = 2,
                               .output_signature = kRecord})
                  .Map(
                      [](Element e) -> absl::StatusOr<Element> {
                        Check(e.size() == 1 && e[0].dtype() == DType::kBytes && e[0].rank() == 0);
                        return Int(static_cast<int64_t>(e[0].scalar<std::string>().size()));
                      },
                      {.output_signature = kInt64})
                  .Cache(InDir("b.cache"))
                  // Finite: behind IgnoreErrors, an endless branch whose restored buffers make
                  // every element fail would never end (as in tf.data).
                  .Repeat(20);
  std::vector<int64_t> slices(30);
  for (int i = 0; i < 30; ++i) slices[i] = i * i;
  Dataset c =
      Dataset::FromTensorSlices({Tensor::FromVector(slices)})
          .Repeat(3)
          .Snapshot(InDir("c.snapshot"), {.num_shards = 2})
          .Enumerate()
          .Map([](Element e) -> absl::StatusOr<Element> { return Int(Add(IntAt(e), IntAt(e, 1))); },
               {.output_signature = kInt64});
  Dataset d = Dataset::SampleFromDatasets({a, b}, {0.6, 0.4}, {.seed = 1});
  Dataset e = Dataset::ChooseFromDatasets(
      {c, Dataset::Range(20).Cache()},
      Dataset::Range(300).Map(
          [](Element x) -> absl::StatusOr<Element> { return Int(IntAt(x) % 2); },
          {.output_signature = kInt64}),
      {.stop_on_empty_dataset = false});
  return Dataset::Zip({d, e})
      .Map([](Element x) -> absl::StatusOr<Element> { return Int(Add(IntAt(x), IntAt(x, 1))); },
           {.num_parallel_calls = 2, .output_signature = kInt64})
      .FlatMap(
          [](Element x) -> absl::StatusOr<Dataset> { return Dataset::Range(IntAt(x) % 3 + 1); },
          kInt64)
      .Scan(
          Int(0),
          [](Element state, Element x) -> absl::StatusOr<std::pair<Element, Element>> {
            const int64_t s = Add(Value(state), IntAt(x));
            return std::make_pair(Int(s), Int(s % 1000));
          },
          kInt64)
      .GroupByWindow([](const Element& x) -> absl::StatusOr<int64_t> { return IntAt(x) % 3; },
                     [](int64_t, Dataset window) -> absl::StatusOr<Dataset> { return window; }, 2,
                     kInt64)
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

// Elements of no type this pipeline buffers anywhere (its elements are scalars and vectors of
// int64, and records), and a restore must refuse each in any buffer.
std::vector<Element> WrongElements() {
  return {{Tensor::Scalar<float>(1)}, {Tensor(DType::kInt64, Shape{1, 1, 1})}, {}};
}

// Every element a checkpoint holds for a restore to take back: buffered (whole or as a source)
// or kept for an inner pipeline, in the states of the nodes it holds (not those saved as absent),
// and the name of the node holding each. Scan's state is left out: a restore does not check it.
struct Held {
  std::string node;
  proto::BufferedResult* buffered = nullptr;
  std::string* blob = nullptr;  // a serialized ElementProto
};
void FindHeld(proto::IteratorStateProto* state, std::vector<Held>* out) {
  if (!absl::StartsWith(state->node(), "Scan[")) {
    for (proto::BufferedResult& b : *state->mutable_buffer()) {
      if (b.status_code() == 0 && !b.end_of_sequence()) out->push_back({state->node(), &b});
    }
  }
  for (auto& [key, blob] : *state->mutable_blobs()) {
    if (key == "input_element" || key == "inner_element") {
      out->push_back({state->node(), nullptr, &blob});
    }
  }
  for (int i = 0; i < state->inputs_size(); ++i) {
    if (i < state->input_present_size() && state->input_present(i)) {
      FindHeld(state->mutable_inputs(i), out);
    }
  }
}

// `checkpoint` once for each node holding elements, the first of them replaced by one of
// WrongElements() (in turn): each must restore as DataLoss (checked here) and nothing else.
std::vector<std::string> Tampered(const std::string& checkpoint) {
  proto::IteratorCheckpoint parsed;
  Check(parsed.ParseFromString(checkpoint));
  std::vector<Held> held;
  FindHeld(parsed.mutable_root(), &held);
  std::vector<std::string> out;
  const std::vector<Element> wrong = WrongElements();
  for (size_t i = 0; i < held.size(); ++i) {
    if (i > 0 && held[i].node == held[i - 1].node) continue;  // one per node
    proto::IteratorCheckpoint tampered = parsed;
    std::vector<Held> where;
    FindHeld(tampered.mutable_root(), &where);
    const Element& e = wrong[out.size() % wrong.size()];
    if (where[i].buffered != nullptr) {
      where[i].buffered->Clear();
      ElementToProto(e, where[i].buffered->mutable_element());
    } else {
      proto::ElementProto p;
      ElementToProto(e, &p);
      *where[i].blob = p.SerializeAsString();
    }
    out.push_back(tampered.SerializeAsString());
    const absl::Status restored = TheDataset().MakeIterator()->Restore(out.back());
    Check(restored.code() == absl::StatusCode::kDataLoss);
  }
  return out;
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
    const std::vector<std::string> tampered = Tampered(*saved);
    for (size_t i = 0; i < tampered.size(); ++i) {
      fuzz::WriteFileOrDie(absl::StrCat(dir, "/at-", stop, "-wrong-type-", i), tampered[i]);
    }
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
