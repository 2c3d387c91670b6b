#ifndef SLUICE_IO_ATOMIC_FILE_H_
#define SLUICE_IO_ATOMIC_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

struct AtomicFileOptions {
  // fsync the data before the rename and the directory after it, so that after a machine crash
  // `path` holds either the old file or the complete new one.
  bool sync = true;
  size_t buffer_size = 256 << 10;
};

// A file written under a temporary name beside its final path (`path` +
// ".tmp.<pid>.<n>.<host>", AtomicFileTempTag's <host>, in the same directory so that the rename is
// atomic) and renamed into place on Commit(). Readers of
// `path` never see a half-written file. Destroying an uncommitted AtomicFile, or a failed
// Commit, removes the temporary file. Not thread-safe.
// What tells this process's temporary names from those of a process with the same pid on another
// machine or in another PID namespace (a cache directory on shared storage): the start of this
// boot's id and the PID namespace's inode, as "<8 hex digits>-<inode>". Only a writer with this
// tag can be looked up by its pid.
const std::string& AtomicFileHostTag();

class AtomicFile {
 public:
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(std::string path,
                                                            AtomicFileOptions options = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Buffered; large pieces go straight to write(2). Errors are sticky.
  absl::Status Append(absl::string_view data);
  // Flushes, (optionally) syncs, closes and renames the file into place. Nothing may follow.
  absl::Status Commit();
  // Removes the temporary file without touching `path`. Nothing may follow.
  void Abandon();
  // Flushes and closes the temporary file and frees the buffer, keeping the file: a writer of
  // many files at once holds a descriptor and a buffer only for those it is writing. The next
  // Append or Commit reopens it.
  absl::Status Park();
  bool parked() const { return parked_; }

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }
  uint64_t bytes_appended() const { return bytes_appended_; }

 private:
  AtomicFile(std::string path, std::string temp_path, int fd, AtomicFileOptions options);
  absl::Status Flush();
  absl::Status WriteAll(const char* data, size_t n);
  absl::Status Fail(absl::Status status);
  absl::Status Unpark();

  std::string path_;
  std::string temp_path_;
  int fd_;  // -1 once committed or abandoned, and while parked.
  bool parked_ = false;
  AtomicFileOptions options_;
  std::unique_ptr<char[]> buffer_;
  size_t buffered_ = 0;
  uint64_t bytes_appended_ = 0;
  absl::Status status_;
};

// Writes `data` to `path` through an AtomicFile.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view data,
                                 AtomicFileOptions options = {});

}  // namespace sluice

#endif  // SLUICE_IO_ATOMIC_FILE_H_
