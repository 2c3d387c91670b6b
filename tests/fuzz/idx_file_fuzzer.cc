// libFuzzer target: the IDX reader (MNIST's format). The bytes are parsed directly, and read from
// a file as they are (raw) and gzip-compressed (the first byte's low bit), or read from a file as
// a gzip stream without compressing them (bit 1); file reads must agree with ParseIdx.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "io/idx_file.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

bool Same(const IdxFile& a, const IdxFile& b) {
  return a.type == b.type && a.dims == b.dims && a.data == b.data;
}

int TestOneInput(uint8_t mode, absl::string_view bytes) {
  absl::StatusOr<IdxFile> parsed = ParseIdx(bytes);
  if (parsed.ok()) {
    Check(parsed->num_elements() * IdxTypeSize(parsed->type) ==
          static_cast<int64_t>(parsed->data.size()));
  }
  if (mode & 2) {  // The bytes as a .gz file: usually not gzip at all.
    const std::string path = fuzz::ScratchPath("input.idx.gz");
    fuzz::WriteFileOrDie(path, bytes);
    (void)ReadIdxFile(path);
    return 0;
  }
  const std::string path = fuzz::ScratchPath((mode & 1) ? "input.idx.gz" : "input.idx");
  fuzz::WriteFileOrDie(path, (mode & 1) ? fuzz::CompressOrDie(bytes, 16 + 15) : std::string(bytes));
  absl::StatusOr<IdxFile> read = ReadIdxFile(path);
  // zlib reads a gzip stream whatever the file's name, so raw bytes that are gzip differ.
  if (!(mode & 1) && absl::StartsWith(bytes, "\x1f\x8b")) return 0;
  Check(read.ok() == parsed.ok());
  if (read.ok()) Check(Same(*read, *parsed));
  return 0;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sluice::fuzz::WithMode(data, size, sluice::TestOneInput);
}
