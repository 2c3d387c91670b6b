#ifndef SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_
#define SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_

// Shared by the libFuzzer targets (tests/fuzz/*_fuzzer.cc): a scratch directory for readers that
// take a path, and TFRecord framing, so that a target can hand the fuzzer's bytes to the parser
// behind a CRC instead of spending its time guessing checksums.

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"

namespace sluice::fuzz {

// An invariant of a target broke: a finding, reported by libFuzzer as a crash.
inline void Check(bool ok) {
  if (!ok) std::abort();
}

// Most targets read their first byte as options (a mode) and the rest as their input: their
// LLVMFuzzerTestOneInput returns WithMode(data, size, fn), which calls fn(mode, input).
template <typename Fn>
int WithMode(const uint8_t* data, size_t size, Fn fn) {
  if (size < 1) return 0;
  return fn(data[0], absl::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
}

// Where scratch directories go: $TMPDIR, else /dev/shm when it is writable (the targets rewrite
// a file on every input), else /tmp.
inline std::string ScratchBase() {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp != nullptr && *tmp) return tmp;
  return ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

// A private directory, made once per process under ScratchBase() and removed at exit.
inline const std::string& ScratchDir() {
  static const std::string* dir = [] {
    std::string pattern = ScratchBase() + "/sluice-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    auto* d = new std::string(pattern);
    std::atexit([] { (void)std::system(("rm -rf '" + ScratchDir() + "'").c_str()); });
    return d;
  }();
  return *dir;
}

// A directory whose name is the same in every process of `target` (and kept): for a target whose
// inputs name files in it, such as checkpoints of a pipeline that reads files there.
inline const std::string& StableScratchDir(absl::string_view target) {
  static const std::string* dir = [&] {
    auto* d = new std::string(ScratchBase() + "/sluice-fuzz-" + std::to_string(::getuid()) + "-" +
                              std::string(target));
    if (::mkdir(d->c_str(), 0700) != 0 && errno != EEXIST) std::abort();
    return d;
  }();
  return *dir;
}

inline std::string ScratchPath(absl::string_view name) {
  return ScratchDir() + "/" + std::string(name);
}

// Replaces `path` with `bytes`; aborts on failure (a broken harness, not a finding).
inline void WriteFileOrDie(const std::string& path, absl::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

// One TFRecord record around `payload`, with valid CRCs.
inline void AppendRecord(absl::string_view payload, std::string* out) {
  char header[tfrecord::kHeaderSize];
  tfrecord::EncodeHeader(header, payload.size());
  out->append(header, sizeof(header));
  out->append(payload.data(), payload.size());
  char footer[tfrecord::kFooterSize];
  tfrecord::EncodeFixed32(footer, MaskCrc32c(Crc32c(payload)));
  out->append(footer, sizeof(footer));
}

// Splits `bytes` into pieces at a separator that fuzzers find easily (and that dictionaries name).
inline std::vector<absl::string_view> SplitPieces(absl::string_view bytes) {
  static constexpr absl::string_view kSep = "\xff\xfe\xfd\xfc";
  std::vector<absl::string_view> pieces;
  while (true) {
    const size_t at = bytes.find(kSep);
    pieces.push_back(bytes.substr(0, at));
    if (at == absl::string_view::npos) break;
    bytes.remove_prefix(at + kSep.size());
  }
  return pieces;
}

// `bytes` compressed as a whole, as TensorFlow writes GZIP and ZLIB TFRecord files.
inline std::string CompressOrDie(absl::string_view bytes, int window_bits) {
  z_stream s{};
  if (deflateInit2(&s, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&s, bytes.size()), '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  s.avail_in = static_cast<uInt>(bytes.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

}  // namespace sluice::fuzz

#endif  // SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_
