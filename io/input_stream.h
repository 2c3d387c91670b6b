#ifndef SLUICE_IO_INPUT_STREAM_H_
#define SLUICE_IO_INPUT_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/compression.h"

namespace sluice {

// A source of bytes read front to back.
class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `n` (> 0) bytes into `dst` and returns how many it read: fewer than `n` is
  // allowed, 0 means the end of the stream.
  virtual absl::StatusOr<size_t> Read(char* dst, size_t n) = 0;
  // Like Read into `dst`, but may go on to read up to `then_n` bytes into `then` once `dst` is
  // full, in the same call (readv(2) for files): returns the total. This default reads `dst` only.
  virtual absl::StatusOr<size_t> ReadThen(char* dst, size_t n, char* then, size_t then_n) {
    return Read(dst, n);
  }
};

// A file read with read(2); `Seek` repositions it.
class FileInputStream : public InputStream {
 public:
  // NotFound (naming the path) when the file does not exist. `sequential` advises the kernel
  // that the file will be read front to back (a larger readahead).
  static absl::StatusOr<std::unique_ptr<FileInputStream>> Open(const std::string& path,
                                                               bool sequential = true);
  ~FileInputStream() override;
  FileInputStream(const FileInputStream&) = delete;
  FileInputStream& operator=(const FileInputStream&) = delete;

  absl::StatusOr<size_t> Read(char* dst, size_t n) override;
  absl::StatusOr<size_t> ReadThen(char* dst, size_t n, char* then, size_t then_n) override;
  absl::Status Seek(uint64_t offset);
  // The file's size now (fstat(2)).
  absl::StatusOr<uint64_t> Size() const;
  const std::string& path() const { return path_; }

 private:
  FileInputStream(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
};

// Inflates a stream compressed as a whole with gzip or zlib, a buffer at a time (never the
// whole stream in memory). Concatenated gzip members, or zlib streams, are read as one stream. An
// empty input is an empty stream; a corrupt or truncated one is DataLoss naming `name` and the
// compressed offset.
class ZlibInputStream : public InputStream {
 public:
  static absl::StatusOr<std::unique_ptr<ZlibInputStream>> Create(
      std::unique_ptr<InputStream> compressed, Compression compression, std::string name,
      size_t input_buffer_size = 256 << 10);
  ~ZlibInputStream() override;
  ZlibInputStream(const ZlibInputStream&) = delete;
  ZlibInputStream& operator=(const ZlibInputStream&) = delete;

  absl::StatusOr<size_t> Read(char* dst, size_t n) override;

 private:
  struct State;
  explicit ZlibInputStream(std::unique_ptr<State> state);
  absl::StatusOr<size_t> FillInput();
  absl::Status Error(absl::string_view what, absl::string_view detail = "") const;

  std::unique_ptr<State> state_;
};

// Reads `n` bytes into `dst`, fewer only where the stream ends first: how many it read.
absl::StatusOr<size_t> ReadUpTo(InputStream& in, char* dst, size_t n);

// Opens `path` for reading, inflating it when `compression` says so.
absl::StatusOr<std::unique_ptr<InputStream>> OpenInputStream(const std::string& path,
                                                             Compression compression,
                                                             size_t buffer_size = 256 << 10);

// A buffer in front of an InputStream: lets a parser look at the next bytes in place (Ensure,
// data, Consume) and copies larger reads straight into the caller's memory, bypassing the
// buffer, so that a big record is copied once.
class BufferedInputStream {
 public:
  BufferedInputStream(std::unique_ptr<InputStream> source, size_t buffer_size);

  // Makes at least `n` (<= capacity()) bytes available at data() unless the stream ends first;
  // returns how many are available (fewer than `n` only at the end).
  absl::StatusOr<size_t> Ensure(size_t n) {
    if (end_ - pos_ >= n) return end_ - pos_;
    return EnsureSlow(n);
  }
  const char* data() const { return buffer_.get() + pos_; }
  size_t available() const { return end_ - pos_; }
  // Drops `n` <= available() bytes.
  void Consume(size_t n) {
    pos_ += n;
    position_ += n;
  }
  // Reads `n` bytes into `dst`; returns how many it read (fewer than `n` only at the end).
  // When the bytes beyond the buffer go straight into `dst`, up to `then` more are read into the
  // buffer in the same system call: the caller's next small read (a record's CRC and the next
  // header). Large records are thus read with one readv(2) each and never copied in user space.
  absl::StatusOr<size_t> ReadFully(char* dst, size_t n, size_t then = 0);

  // Offset in the stream of data().
  uint64_t position() const { return position_; }
  size_t capacity() const { return capacity_; }
  // Moves to `position` when it lies within the buffered window; false otherwise.
  bool SkipWithinBuffer(uint64_t position);
  // Discards the buffer after the source was repositioned to `position`.
  void Reset(uint64_t position);

  InputStream* source() const { return source_.get(); }

 private:
  absl::StatusOr<size_t> EnsureSlow(size_t n);

  static constexpr size_t kDirectReadMin = 32 << 10;

  std::unique_ptr<InputStream> source_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_;
  size_t pos_ = 0;  // buffer_[pos_, end_) is unread.
  size_t end_ = 0;
  uint64_t position_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_IO_INPUT_STREAM_H_
