#include "io/compression.h"

#include <zlib.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<Compression> CompressionFromName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower.empty() || lower == "none") return Compression::kNone;
  if (lower == "gzip") return Compression::kGzip;
  if (lower == "zlib") return Compression::kZlib;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown compression \"", name, "\": expected \"\", \"none\", \"gzip\" or \"zlib\""));
}

Compression GuessCompression(absl::string_view path) {
  if (absl::EndsWith(path, ".gz")) return Compression::kGzip;
  if (absl::EndsWith(path, ".zlib") || absl::EndsWith(path, ".zz")) return Compression::kZlib;
  return Compression::kNone;
}

absl::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZlib:
      return "zlib";
  }
  return "unknown";
}

int ZlibWindowBits(Compression c) { return c == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS; }

absl::string_view WrongCompressionHint(absl::string_view head, Compression read_as) {
  if (head.size() < 2) return "";
  const auto b0 = static_cast<unsigned char>(head[0]);
  const auto b1 = static_cast<unsigned char>(head[1]);
  const bool gzip = b0 == 0x1f && b1 == 0x8b;
  // RFC 1950's header: deflate, a window of at most 32 KiB, and the check bits.
  const bool zlib = (b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && (b0 * 256 + b1) % 31 == 0;
  if (gzip && read_as != Compression::kGzip) {
    return " (the file starts like a GZIP stream: read it as gzip?)";
  }
  // An uncompressed TFRecord starts with a length, which passes the check by chance more often
  // than with 0x78, the 32 KiB window that every writer uses.
  if (zlib && read_as != Compression::kZlib && (read_as != Compression::kNone || b0 == 0x78)) {
    return " (the file starts like a ZLIB stream: read it as zlib?)";
  }
  if (!gzip && !zlib && read_as != Compression::kNone) {
    return " (the file starts like neither a GZIP nor a ZLIB stream: is it uncompressed?)";
  }
  return "";
}

struct ZlibCompressor::State {
  z_stream strm{};
  bool initialized = false;
  bool finished = false;
  Compression compression = Compression::kGzip;
  Sink sink;
  std::unique_ptr<char[]> out;
  size_t out_size = 0;
};

ZlibCompressor::ZlibCompressor(std::unique_ptr<State> state) : state_(std::move(state)) {}

ZlibCompressor::~ZlibCompressor() {
  if (state_->initialized) deflateEnd(&state_->strm);
}

absl::StatusOr<std::unique_ptr<ZlibCompressor>> ZlibCompressor::Create(Compression compression,
                                                                       int level, Sink sink,
                                                                       size_t buffer_size) {
  if (compression == Compression::kNone) {
    return absl::InvalidArgumentError("ZlibCompressor needs gzip or zlib compression");
  }
  if (level < -1 || level > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("compression level ", level, " is out of range: expected -1 or 0..9"));
  }
  auto state = std::make_unique<State>();
  state->compression = compression;
  state->sink = std::move(sink);
  state->out_size = std::max<size_t>(buffer_size, 4096);
  state->out = std::make_unique<char[]>(state->out_size);
  const int rc = deflateInit2(&state->strm, level, Z_DEFLATED, ZlibWindowBits(compression),
                              /*memLevel=*/8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    return absl::InternalError(absl::StrCat("deflateInit2 failed: ", zError(rc)));
  }
  state->initialized = true;
  return std::unique_ptr<ZlibCompressor>(new ZlibCompressor(std::move(state)));
}

absl::Status ZlibCompressor::Deflate(int flush) {
  z_stream& s = state_->strm;
  while (true) {
    s.next_out = reinterpret_cast<Bytef*>(state_->out.get());
    s.avail_out = static_cast<uInt>(state_->out_size);
    const int rc = deflate(&s, flush);
    if (rc == Z_STREAM_ERROR) {
      return absl::InternalError(absl::StrCat("deflate failed: ", s.msg ? s.msg : zError(rc)));
    }
    const size_t produced = state_->out_size - s.avail_out;
    if (produced > 0)
      SLUICE_RETURN_IF_ERROR(state_->sink(absl::string_view(state_->out.get(), produced)));
    // deflate stops early only when it fills the output buffer; otherwise the input is consumed
    // (or, when finishing, the stream has ended).
    if (flush == Z_FINISH ? rc == Z_STREAM_END : (s.avail_in == 0 && s.avail_out != 0)) break;
  }
  return absl::OkStatus();
}

absl::Status ZlibCompressor::Write(absl::string_view data) {
  if (state_->finished) return absl::FailedPreconditionError("ZlibCompressor: Write after Finish");
  z_stream& s = state_->strm;
  // avail_in is 32 bits wide: feed huge inputs in slices.
  constexpr size_t kMaxSlice = size_t{1} << 30;
  while (!data.empty()) {
    const size_t slice = std::min(data.size(), kMaxSlice);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    s.avail_in = static_cast<uInt>(slice);
    SLUICE_RETURN_IF_ERROR(Deflate(Z_NO_FLUSH));
    data.remove_prefix(slice);
  }
  return absl::OkStatus();
}

absl::Status ZlibCompressor::Finish() {
  if (state_->finished) return absl::FailedPreconditionError("ZlibCompressor: Finish called twice");
  state_->finished = true;
  state_->strm.next_in = nullptr;
  state_->strm.avail_in = 0;
  return Deflate(Z_FINISH);
}

}  // namespace sluice
