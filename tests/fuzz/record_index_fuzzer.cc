// libFuzzer target: the record index side file (RecordIndex::Load and IndexedTFRecordFile over a
// fixed TFRecord file). The first byte's low bit asks for a well-formed header around the rest:
// the magic, version, the data file's real size and mtime, a count and the CRC are filled in, and
// the rest becomes the offsets, so the fuzzer reaches the checks behind the CRC.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/record_index.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

struct DataFile {
  std::string path;
  std::vector<std::string> payloads;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

const DataFile& Data() {
  static const DataFile* data = [] {
    auto* d = new DataFile;
    d->path = fuzz::ScratchPath("data.tfrecord");
    d->payloads = {"", "a", std::string(100, 'b'), "record three", std::string(5000, 'c')};
    std::string bytes;
    for (const std::string& p : d->payloads) fuzz::AppendRecord(p, &bytes);
    fuzz::WriteFileOrDie(d->path, bytes);
    struct stat st;
    if (::stat(d->path.c_str(), &st) != 0) std::abort();
    d->size = static_cast<uint64_t>(st.st_size);
    d->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    return d;
  }();
  return *data;
}

std::string WellFormed(absl::string_view offsets, const DataFile& data) {
  std::string out(40, '\0');
  std::memcpy(out.data(), "SLUICEIX", 8);
  tfrecord::EncodeFixed32(out.data() + 8, 1);
  tfrecord::EncodeFixed64(out.data() + 16, data.size);
  tfrecord::EncodeFixed64(out.data() + 24, static_cast<uint64_t>(data.mtime_ns));
  tfrecord::EncodeFixed64(out.data() + 32, offsets.size() / 8);
  out.append(offsets.data(), offsets.size() / 8 * 8);
  char crc[4];
  tfrecord::EncodeFixed32(crc, MaskCrc32c(Crc32c(out)));
  out.append(crc, 4);
  return out;
}

int TestOneInput(uint8_t mode, absl::string_view rest) {
  const DataFile& file = Data();
  const std::string index_bytes = (mode & 1) ? WellFormed(rest, file) : std::string(rest);
  const std::string index_path = RecordIndex::IndexPathFor(file.path);
  fuzz::WriteFileOrDie(index_path, index_bytes);

  absl::StatusOr<RecordIndex> index = RecordIndex::Load(index_path, file.path);
  if (index.ok()) Check(index->size() <= static_cast<int64_t>(file.size / tfrecord::kOverhead));
  // Open loads the index, or rebuilds it when it is bad: every record it returns with verified
  // CRCs is one of the file's records.
  const bool verify = (mode & 2) == 0;
  absl::StatusOr<std::unique_ptr<IndexedTFRecordFile>> opened =
      IndexedTFRecordFile::Open(file.path, verify);
  if (!opened.ok()) return 0;
  std::string record;
  for (int64_t i = -1; i <= (*opened)->size(); ++i) {
    const absl::Status s = (*opened)->Read(i, &record);
    if (i < 0 || i == (*opened)->size()) {
      Check(absl::IsOutOfRange(s));
      continue;
    }
    if (s.ok() && verify) {
      bool known = false;
      for (const std::string& p : file.payloads) known = known || p == record;
      Check(known);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sluice::fuzz::WithMode(data, size, sluice::TestOneInput);
}
