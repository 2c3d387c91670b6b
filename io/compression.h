#ifndef SLUICE_IO_COMPRESSION_H_
#define SLUICE_IO_COMPRESSION_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// How a whole TFRecord stream is compressed (TensorFlow's compression_type "", "GZIP", "ZLIB").
enum class Compression { kNone, kGzip, kZlib };

// "", "none", "gzip", "zlib", in any case. Anything else is InvalidArgument.
absl::StatusOr<Compression> CompressionFromName(absl::string_view name);
// From the file name: ".gz" -> kGzip, ".zlib" or ".zz" -> kZlib, anything else kNone.
Compression GuessCompression(absl::string_view path);
// "none", "gzip" or "zlib" (accepted back by CompressionFromName).
absl::string_view CompressionName(Compression c);
// The zlib windowBits for inflate/deflate: 16 + 15 for gzip, 15 for zlib.
int ZlibWindowBits(Compression c);
// For the error of a file read from its start as `read_as` that failed at once: what its first
// two bytes (`head`) look like, when that is another compression: " (the file starts like a GZIP
// stream: read it as gzip?)", " (... like neither a GZIP nor a ZLIB stream: is it uncompressed?)"
// for a compressed read, or "" where they do not tell.
absl::string_view WrongCompressionHint(absl::string_view head, Compression read_as);

// Streams data through zlib's deflate, handing the compressed bytes to `sink` in pieces of up
// to `buffer_size`. The decompressing side is ZlibInputStream (io/input_stream.h).
class ZlibCompressor {
 public:
  using Sink = std::function<absl::Status(absl::string_view)>;

  // `compression` is kGzip or kZlib; `level` is -1 (zlib's default) or 0..9.
  static absl::StatusOr<std::unique_ptr<ZlibCompressor>> Create(Compression compression, int level,
                                                                Sink sink,
                                                                size_t buffer_size = 256 << 10);
  ~ZlibCompressor();
  ZlibCompressor(const ZlibCompressor&) = delete;
  ZlibCompressor& operator=(const ZlibCompressor&) = delete;

  absl::Status Write(absl::string_view data);
  // Ends the stream (writes the gzip/zlib trailer) and hands everything left to the sink.
  // No Write may follow.
  absl::Status Finish();

 private:
  struct State;
  explicit ZlibCompressor(std::unique_ptr<State> state);
  absl::Status Deflate(int flush);

  std::unique_ptr<State> state_;
};

}  // namespace sluice

#endif  // SLUICE_IO_COMPRESSION_H_
