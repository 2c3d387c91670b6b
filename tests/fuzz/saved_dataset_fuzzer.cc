// libFuzzer target: the files of a saved dataset (Dataset::Save / Load, Snapshot's layout,
// dataset/saved_dataset.h). With the first byte's low bit clear the rest is manifest.pb, beside
// one valid shard file of two elements; set, the rest is split into element payloads framed as
// a shard (valid CRCs) that a valid manifest names, so the fuzzer reaches the element parser.
// When every payload is a valid element, Load must yield exactly those elements; otherwise it
// must end with an error, never a crash or a read past what the files hold. The manifest's
// element_spec (mode 0) is fuzzed with the rest of it.
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes seed inputs into DIR: a valid manifest
// for the valid shard, and valid element payloads (tools/fuzz.sh --seeds).

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

constexpr char kShard[] = "shard-fuzz-00000.tfrecord";

std::string Element2(const Element& e) {
  proto::ElementProto p;
  ElementToProto(e, &p);
  return p.SerializeAsString();
}

// The shard of two valid elements that manifests in mode 0 may name.
const std::string& ValidShard() {
  static const std::string* shard = [] {
    auto* s = new std::string;
    for (int64_t i = 0; i < 2; ++i) {
      fuzz::AppendRecord(Element2({Tensor::Scalar<int64_t>(i), Tensor::Scalar<std::string>("x")}),
                         s);
    }
    return s;
  }();
  return *shard;
}

// With `spec`, the element_spec of ValidShard's elements (int64[], bytes[]).
std::string Manifest(int64_t elements, int64_t bytes, bool spec) {
  proto::SavedDatasetManifest m;
  if (spec) {
    m.set_element_spec_known(true);
    m.add_element_spec()->set_dtype(static_cast<int>(DType::kInt64));
    m.add_element_spec()->set_dtype(static_cast<int>(DType::kBytes));
  }
  m.set_version(1);
  m.set_run_id("fuzz");
  m.set_pipeline("fuzz");
  proto::SavedShard* s = m.add_shards();
  s->set_file(kShard);
  s->set_elements(elements);
  s->set_bytes(bytes);
  m.set_elements(elements);
  m.set_bytes(bytes);
  return m.SerializeAsString();
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace sluice;
  google::protobuf::SetLogHandler(nullptr);  // parse failures are expected by the thousand
  if (const char* dir = std::getenv("SLUICE_FUZZ_SEEDS")) {
    const std::string d(dir);
    fuzz::WriteFileOrDie(
        d + "/manifest",
        std::string(1, '\0') + Manifest(2, static_cast<int64_t>(ValidShard().size()), true));
    fuzz::WriteFileOrDie(d + "/elements",
                         std::string(1, '\1') + Element2({Tensor::Scalar<int64_t>(7)}) +
                             "\xff\xfe\xfd\xfc" +
                             Element2({*Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2}),
                                       Tensor::Scalar<std::string>("label")}));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  if (size < 1) return 0;
  static const std::string* dir = new std::string(fuzz::ScratchPath("saved"));
  // A new Load each input: a Load keeps the element_spec it first read from the manifest.
  const Dataset loaded = Dataset::Load(*dir);
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  (void)::mkdir(dir->c_str(), 0700);

  std::optional<std::vector<Element>> expected;
  if (data[0] & 1) {
    std::string shard;
    expected.emplace();
    for (absl::string_view p : fuzz::SplitPieces(rest)) {
      fuzz::AppendRecord(p, &shard);
      absl::StatusOr<Element> e = fuzz::ElementFromPayload(p);
      if (!e.ok()) expected.reset();
      if (expected) expected->push_back(*std::move(e));
    }
    const int64_t pieces = static_cast<int64_t>(fuzz::SplitPieces(rest).size());
    fuzz::WriteFileOrDie(*dir + "/" + kShard, shard);
    fuzz::WriteFileOrDie(*dir + "/manifest.pb",
                         Manifest(pieces, static_cast<int64_t>(shard.size()), false));
  } else {
    fuzz::WriteFileOrDie(*dir + "/" + kShard, ValidShard());
    fuzz::WriteFileOrDie(*dir + "/manifest.pb", rest);
  }

  std::unique_ptr<Iterator> it = loaded.MakeIterator();
  const fuzz::ReadOut got = fuzz::ReadAll(*it);
  if (expected) {
    fuzz::CheckReadExactly(got, *expected);
  } else if (data[0] & 1) {
    Check(!got.status.ok());  // a bad element is an error, not silently dropped
  }
  return 0;
}
