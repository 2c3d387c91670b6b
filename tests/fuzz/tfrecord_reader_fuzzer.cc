// libFuzzer target: TFRecordReader on arbitrary files (none, GZIP, ZLIB; with and without
// skip_corrupt and CRC checks). The first byte picks the options; with its "framed" bit the rest
// is split into payloads that are written as valid records (compressed as the options say), and
// every payload must read back unchanged.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/compression.h"
#include "io/tfrecord_reader.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

struct Outcome {
  std::vector<std::string> records;
  absl::Status status;
  int64_t skipped = 0;
};

Outcome ReadAll(TFRecordReader* reader) {
  Outcome out;
  const int64_t skipped_before = reader->records_skipped();  // Seek keeps counting skips
  std::string record;
  // Bounded: every record consumes at least its 16 framing bytes, so a file holds few records.
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<bool> more = reader->ReadRecord(&record);
    if (!more.ok()) {
      out.status = more.status();
      // Sticky: asking again gives the same error.
      absl::StatusOr<bool> again = reader->ReadRecord(&record);
      Check(!again.ok() && again.status() == out.status);
      break;
    }
    if (!*more) break;
    out.records.push_back(record);
  }
  out.skipped = reader->records_skipped() - skipped_before;
  Check(reader->records_read() == static_cast<int64_t>(out.records.size()) + out.skipped ||
        !out.status.ok());
  return out;
}

int TestOneInput(uint8_t mode, absl::string_view rest) {
  TFRecordReaderOptions options;
  switch (mode & 3) {
    case 1:
      options.compression = Compression::kGzip;
      break;
    case 2:
      options.compression = Compression::kZlib;
      break;
    default:
      options.compression = Compression::kNone;
      break;
  }
  options.skip_corrupt = (mode & 4) != 0;
  options.verify_crc = (mode & 8) == 0;
  options.buffer_size = (mode & 32) ? 4096 : options.buffer_size;
  const bool framed = (mode & 16) != 0;

  std::vector<absl::string_view> payloads;
  std::string file;
  if (framed) {
    payloads = fuzz::SplitPieces(rest);
    for (absl::string_view p : payloads) fuzz::AppendRecord(p, &file);
    if (options.compression != Compression::kNone) {
      file = fuzz::CompressOrDie(file, ZlibWindowBits(options.compression));
    }
  } else {
    file.assign(rest.data(), rest.size());
  }
  const std::string path = fuzz::ScratchPath("input.tfrecord");
  fuzz::WriteFileOrDie(path, file);

  absl::StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(path, options);
  if (!reader.ok()) return 0;
  const Outcome first = ReadAll(reader->get());
  if (framed) {  // Valid records read back exactly.
    Check(first.status.ok() && first.skipped == 0 && first.records.size() == payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) Check(first.records[i] == payloads[i]);
  }
  if (options.compression == Compression::kNone) {
    // Reading again from the start gives the same records and the same outcome.
    Check((*reader)->Seek(0, 0).ok());
    const Outcome second = ReadAll(reader->get());
    Check(second.records == first.records && second.status == first.status &&
          second.skipped == first.skipped);
  }
  return 0;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sluice::fuzz::WithMode(data, size, sluice::TestOneInput);
}
