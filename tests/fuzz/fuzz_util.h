#ifndef SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_
#define SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_

// Shared by the libFuzzer targets (tests/fuzz/*_fuzzer.cc): a scratch directory for readers that
// take a path, and TFRecord framing, so that a target can hand the fuzzer's bytes to the parser
// behind a CRC instead of spending its time guessing checksums.

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"

namespace sluice::fuzz {

// An invariant of a target broke: a finding, reported by libFuzzer as a crash.
inline void Check(bool ok) {
  if (!ok) std::abort();
}

// A step of the harness itself that must work (writing seeds): its failure is a broken harness.
inline void CheckOk(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "harness failure: %s\n", std::string(s.message()).c_str());
    std::abort();
  }
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

// The bytes of `path`; aborts on failure (a broken harness, not a finding).
inline std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) std::abort();
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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

// A training checkpoint file (train/fit/training_checkpoint.h's format) around `payload`: its
// magic line, the payload's length and a valid CRC.
inline std::string FrameCheckpoint(absl::string_view payload) {
  std::string file = "sluice-checkpoint-1\n";
  char fixed[12];
  tfrecord::EncodeFixed64(fixed, payload.size());
  tfrecord::EncodeFixed32(fixed + 8, MaskCrc32c(Crc32c(payload)));
  file.append(fixed, sizeof(fixed));
  file.append(payload.data(), payload.size());
  return file;
}

// The payload of a training checkpoint file: what FrameCheckpoint frames.
inline std::string CheckpointPayload(absl::string_view file) {
  const size_t header = std::string("sluice-checkpoint-1\n").size() + 12;
  return std::string(file.substr(std::min(header, file.size())));
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
