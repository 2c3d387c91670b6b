#include "io/input_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/os_error.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"

namespace sluice {

// ---------------------------------------------------------------------------------------------
// FileInputStream

absl::StatusOr<std::unique_ptr<FileInputStream>> FileInputStream::Open(const std::string& path,
                                                                       bool sequential) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return OsError(errno, path);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return WithErrno(
        absl::FailedPreconditionError(absl::StrCat(path, ": is a directory, not a file")), EISDIR);
  }
  // Advice only: doubles the kernel's readahead for files read front to back.
  if (sequential) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<FileInputStream>(new FileInputStream(path, fd));
}

FileInputStream::~FileInputStream() { ::close(fd_); }

absl::StatusOr<size_t> FileInputStream::Read(char* dst, size_t n) {
  profiler::Span span("io", "file read");
  while (true) {
    const ssize_t got = ::read(fd_, dst, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return OsError(errno, path_, ": read failed");
  }
}

absl::StatusOr<size_t> FileInputStream::ReadThen(char* dst, size_t n, char* then, size_t then_n) {
  struct iovec iov[2] = {{dst, n}, {then, then_n}};
  while (true) {
    const ssize_t got = ::readv(fd_, iov, then_n > 0 ? 2 : 1);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return OsError(errno, path_, ": read failed");
  }
}

absl::StatusOr<size_t> ReadUpTo(InputStream& in, char* dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    SLUICE_ASSIGN_OR_RETURN(const size_t got, in.Read(dst + done, n - done));
    if (got == 0) break;
    done += got;
  }
  return done;
}

absl::StatusOr<uint64_t> FileInputStream::Size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return OsError(errno, path_, ": fstat");
  return static_cast<uint64_t>(st.st_size);
}

absl::Status FileInputStream::Seek(uint64_t offset) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    return OsError(errno, path_, ": cannot seek to offset ", offset);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// ZlibInputStream

struct ZlibInputStream::State {
  std::unique_ptr<InputStream> source;
  Compression compression = Compression::kGzip;
  std::string name;
  z_stream strm{};
  bool initialized = false;
  std::unique_ptr<char[]> in;
  size_t in_size = 0;
  uint64_t compressed_read = 0;  // Bytes read from `source`.
  bool in_member = false;        // Inside a gzip member / zlib stream that has not ended yet.
  bool done = false;             // The stream ended cleanly.
  absl::Status status;           // Sticky error.
  std::string head;              // The first bytes of `source`, for a wrong compression's hint.
  uint64_t produced = 0;         // Uncompressed bytes returned.

  uint64_t compressed_offset() const { return compressed_read - strm.avail_in; }
};

ZlibInputStream::ZlibInputStream(std::unique_ptr<State> state) : state_(std::move(state)) {}

ZlibInputStream::~ZlibInputStream() {
  if (state_->initialized) inflateEnd(&state_->strm);
}

absl::StatusOr<std::unique_ptr<ZlibInputStream>> ZlibInputStream::Create(
    std::unique_ptr<InputStream> compressed, Compression compression, std::string name,
    size_t input_buffer_size) {
  if (compression == Compression::kNone) {
    return absl::InvalidArgumentError("ZlibInputStream needs gzip or zlib compression");
  }
  auto state = std::make_unique<State>();
  state->source = std::move(compressed);
  state->compression = compression;
  state->name = std::move(name);
  state->in_size = std::max<size_t>(input_buffer_size, 4096);
  state->in = std::make_unique_for_overwrite<char[]>(state->in_size);
  const int rc = inflateInit2(&state->strm, ZlibWindowBits(compression));
  if (rc != Z_OK) {
    return absl::InternalError(absl::StrCat(state->name, ": inflateInit2 failed: ", zError(rc)));
  }
  state->initialized = true;
  return std::unique_ptr<ZlibInputStream>(new ZlibInputStream(std::move(state)));
}

absl::Status ZlibInputStream::Error(absl::string_view what, absl::string_view detail) const {
  return absl::DataLossError(
      absl::StrCat(state_->name, ": ", what, " ", CompressionName(state_->compression),
                   " stream at compressed offset ", state_->compressed_offset(), detail));
}

absl::StatusOr<size_t> ZlibInputStream::FillInput() {
  SLUICE_ASSIGN_OR_RETURN(size_t got, state_->source->Read(state_->in.get(), state_->in_size));
  state_->strm.next_in = reinterpret_cast<Bytef*>(state_->in.get());
  state_->strm.avail_in = static_cast<uInt>(got);
  if (state_->compressed_read == 0) state_->head.assign(state_->in.get(), std::min<size_t>(got, 2));
  state_->compressed_read += got;
  return got;
}

absl::StatusOr<size_t> ZlibInputStream::Read(char* dst, size_t n) {
  State& st = *state_;
  if (!st.status.ok()) return st.status;
  z_stream& s = st.strm;
  // avail_out is 32 bits wide; a short read is allowed.
  n = std::min<size_t>(n, size_t{1} << 30);
  s.next_out = reinterpret_cast<Bytef*>(dst);
  s.avail_out = static_cast<uInt>(n);
  while (!st.done && s.avail_out == n) {
    if (s.avail_in == 0) {
      auto got = FillInput();
      if (!got.ok()) return st.status = got.status();
      if (*got == 0) {
        if (st.in_member) return st.status = Error("truncated");
        st.done = true;  // Ended between members (or the input was empty).
        break;
      }
    }
    if (!st.in_member) {
      // A new gzip member or zlib stream (or the start of the stream): a parked TFRecordWriter
      // writes several. (TensorFlow's reader takes gzip members only.)
      if (st.compressed_offset() > 0) inflateReset(&s);
      st.in_member = true;
    }
    const int rc = inflate(&s, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      st.in_member = false;
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && s.avail_in == 0)) {
      // Z_BUF_ERROR with no input left only asks for more input.
      // Failing before any output: perhaps not this compression at all.
      const absl::string_view hint =
          st.produced + (n - s.avail_out) == 0 ? WrongCompressionHint(st.head, st.compression) : "";
      return st.status =
                 Error("corrupt", absl::StrCat(" (zlib: ", s.msg ? s.msg : zError(rc), ")", hint));
    }
  }
  st.produced += n - s.avail_out;
  return n - s.avail_out;
}

absl::StatusOr<std::unique_ptr<InputStream>> OpenInputStream(const std::string& path,
                                                             Compression compression,
                                                             size_t buffer_size) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> file, FileInputStream::Open(path));
  if (compression == Compression::kNone) return std::unique_ptr<InputStream>(std::move(file));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ZlibInputStream> z,
                          ZlibInputStream::Create(std::move(file), compression, path, buffer_size));
  return std::unique_ptr<InputStream>(std::move(z));
}

// ---------------------------------------------------------------------------------------------
// BufferedInputStream

BufferedInputStream::BufferedInputStream(std::unique_ptr<InputStream> source, size_t buffer_size)
    : source_(std::move(source)), capacity_(std::max<size_t>(buffer_size, 64)) {
  buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
}

absl::StatusOr<size_t> BufferedInputStream::EnsureSlow(size_t n) {
  n = std::min(n, capacity_);
  if (pos_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  while (end_ < n) {
    SLUICE_ASSIGN_OR_RETURN(size_t got, source_->Read(buffer_.get() + end_, capacity_ - end_));
    if (got == 0) break;
    end_ += got;
  }
  return end_;
}

absl::StatusOr<size_t> BufferedInputStream::ReadFully(char* dst, size_t n, size_t then) {
  size_t done = std::min(n, end_ - pos_);
  if (done > 0) std::memcpy(dst, buffer_.get() + pos_, done);
  pos_ += done;
  // position_ follows every byte handed out, so that it stays right when a read below fails.
  position_ += done;
  // Past this size, reading straight into `dst` beats copying through the buffer.
  const size_t direct_min = std::min(capacity_ / 2, kDirectReadMin);
  while (done < n) {
    const size_t left = n - done;
    if (left >= direct_min) {
      pos_ = end_ = 0;
      const size_t extra = std::min(then, capacity_);
      SLUICE_ASSIGN_OR_RETURN(size_t got,
                              source_->ReadThen(dst + done, left, buffer_.get(), extra));
      if (got == 0) break;
      if (got > left) {  // Filled `dst` and read ahead into the buffer.
        end_ = got - left;
        got = left;
      }
      done += got;
      position_ += got;
    } else {
      pos_ = end_ = 0;
      SLUICE_ASSIGN_OR_RETURN(size_t got, source_->Read(buffer_.get(), capacity_));
      if (got == 0) break;
      end_ = got;
      const size_t take = std::min(left, got);
      std::memcpy(dst + done, buffer_.get(), take);
      pos_ = take;
      done += take;
      position_ += take;
    }
  }
  return done;
}

bool BufferedInputStream::SkipWithinBuffer(uint64_t position) {
  // buffer_[0, end_) holds the stream's bytes from position_ - pos_ on.
  const uint64_t window_start = position_ - pos_;
  if (position < window_start || position > window_start + end_) return false;
  pos_ = static_cast<size_t>(position - window_start);
  position_ = position;
  return true;
}

void BufferedInputStream::Reset(uint64_t position) {
  pos_ = end_ = 0;
  position_ = position;
}

}  // namespace sluice
