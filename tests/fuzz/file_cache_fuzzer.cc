// libFuzzer target: the files of Cache(path) (dataset/file_cache_iterator.cc). With the first
// byte's low bit clear the rest is the cache file as it is; set, the rest is split into element
// payloads that are framed as a complete cache file for this pipeline (header, CRCs, end record),
// so the fuzzer reaches the element parser; when every payload is a valid element, the replay
// must yield exactly those elements. Either way a file it cannot use is rebuilt from the input.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/iterator.h"
#include "dataset/proto/iterator_state.pb.h"
#include "dataset/proto/saved_dataset.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/saved_elements.h"

namespace sluice {
namespace {

using fuzz::Check;

std::string Fixed64(uint64_t v) {
  char b[8];
  tfrecord::EncodeFixed64(b, v);
  return std::string(b, 8);
}

std::string CacheFile(const std::vector<absl::string_view>& payloads, const std::string& pipeline) {
  const std::string id = Fixed64(0x5eed5eed5eed5eedu);
  // The header's identity: Range reads no files, so its pipeline is all there is to it.
  proto::SavedDatasetManifest identity;
  identity.set_pipeline(pipeline);
  std::string file;
  fuzz::AppendRecord("sluice-cache/2\n" + id + identity.SerializeAsString(), &file);
  for (absl::string_view p : payloads) fuzz::AppendRecord(p, &file);
  fuzz::AppendRecord("sluice-cache-end" + Fixed64(payloads.size()) + id, &file);
  return file;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Parse failures are expected by the thousand; protobuf would log each one.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  if (size < 1) return 0;
  static const std::string* path = new std::string(fuzz::ScratchPath("fuzz.cache"));
  static const Dataset* input = new Dataset(Dataset::Range(3));
  static const Dataset* cached = new Dataset(input->Cache(*path));
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::optional<std::vector<Element>> expected;
  if (data[0] & 1) {
    const std::vector<absl::string_view> payloads = fuzz::SplitPieces(rest);
    fuzz::WriteFileOrDie(*path, CacheFile(payloads, input->DebugString()));
    expected.emplace();
    for (absl::string_view p : payloads) {
      absl::StatusOr<Element> e = fuzz::ElementFromPayload(p);
      if (!e.ok()) {
        expected.reset();
        break;
      }
      expected->push_back(*std::move(e));
    }
  } else {
    fuzz::WriteFileOrDie(*path, rest);
  }

  std::unique_ptr<Iterator> it = cached->MakeIterator();
  const fuzz::ReadOut got = fuzz::ReadAll(*it);
  if (expected) {
    // The cache holds the input's elements only while they are of its type (int64 scalars): the
    // first that is not ends the pass with DataLoss in its place, after those before it.
    size_t typed = 0;
    while (typed < expected->size() && input->element_spec().Check((*expected)[typed]).ok()) {
      ++typed;
    }
    if (typed == expected->size()) {
      fuzz::CheckReadExactly(got, *expected);
    } else {
      fuzz::Check(got.status.code() == absl::StatusCode::kDataLoss);
      expected->resize(typed);
      fuzz::CheckReadExactly({got.elements, absl::OkStatus()}, *expected);
    }
  }
  return 0;
}
