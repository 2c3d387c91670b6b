// Cache(path) in a file.
//
// In a file: the elements go to a temporary file beside `path` that is renamed into place once
// the input ended, so `path` only ever holds a complete cache. The file is TFRecord-framed
// (length, CRC-32C of the length, payload, CRC-32C of the payload):
//   record 0     header: "sluice-cache/2\n", an 8-byte random id, the input's identity (a
//                SavedDatasetManifest of Snapshot's: its DebugString and the files it reads,
//                with their sizes and modification times)
//   records 1..n the elements, each a serialized ElementProto
//   record n+1   footer (32 bytes): "sluice-cache-end", the element count n, the id again
// An iterator made when a valid file for this pipeline exists reads it. A missing footer
// (truncated file), a header for another pipeline, for other or changed input files (a
// DebugString names a TFRecord source's file count, not its paths), or garbage gets one warning
// on stderr; the file
// is removed and the input read again. So is a leftover temporary file of a writer that is gone.
// A record found corrupt while replaying (its CRC) is an error naming the file, the record and its
// offset; the file is removed so that the next pass rebuilds it, and the replay ends there. A read
// that fails for another reason (an I/O error) also ends the replay with that error, but keeps the
// file, the bytes may be fine, unless the replay before it failed so too.
//
// File mode checkpoints, reading: the position, the record's offset and the file's id (restore
// fails clearly if the file changed). Writing: the input's state and the position; a half-written
// file is not resumed: the iterator restored mid-pass reads the rest of its input without
// writing, and the next pass (a later iterator) writes the cache. Restored at position 0 it writes
// as usual.
#include "dataset/file_cache_iterator.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/mutex.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"
#include "dataset/proto/saved_dataset.pb.h"
#include "dataset/saved_dataset.h"
#include "dataset/write_through.h"
#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/input_stream.h"
#include "io/tfrecord_format.h"
#include "io/tfrecord_reader.h"

namespace sluice::internal {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kHeaderMagic = "sluice-cache/2\n";
constexpr absl::string_view kFooterMagic = "sluice-cache-end";  // 16 bytes
constexpr size_t kFooterPayload = 32;                           // magic, count, id
constexpr size_t kFooterRecord = tfrecord::kOverhead + kFooterPayload;

void Warn(const std::string& message) {
  std::fprintf(stderr, "sluice: warning: %s\n", message.c_str());
}

// Temporary files this process is writing right now, so that a cleanup of leftovers never removes
// a live one.
struct LiveTempFiles {
  Mutex mu;
  std::set<std::string> paths ABSL_GUARDED_BY(mu);

  static LiveTempFiles& Get() {
    static auto* files = new LiveTempFiles;  // never destroyed: writers may outlive main
    return *files;
  }
};

// A temporary file of another machine's or PID namespace's writer, which its pid cannot tell
// about, is a leftover once it has not changed for this long (SavedDatasetWriter's rule for runs).
constexpr auto kForeignTempFileAge = std::chrono::hours(1);

// Removes `path`.tmp.<pid>.<n>.<host> files (io/atomic_file.h's temporary names) whose writer is
// gone: another process of this host (AtomicFileHostTag) that no longer exists, this process when
// no writer here owns the file, or a writer elsewhere (a cache on shared storage) whose file has
// not changed for kForeignTempFileAge. Names without a host are of older versions, looked up by
// pid.
void RemoveLeftoverTempFiles(const std::string& path, const std::string& node) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string base = p.filename().string();
  const std::string prefix = base + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!absl::StartsWith(name, prefix)) continue;
    const std::vector<std::string> parts = absl::StrSplit(name.substr(prefix.size()), '.');
    int64_t pid = 0;
    uint64_t n = 0;
    if (parts.size() < 2 || parts.size() > 3 || !absl::SimpleAtoi(parts[0], &pid) ||
        !absl::SimpleAtoi(parts[1], &n) || pid <= 0) {
      continue;  // Not a temporary name of ours.
    }
    const std::string temp = path + name.substr(base.size());
    const bool this_host = parts.size() == 2 || parts[2] == AtomicFileHostTag();
    bool gone;
    if (!this_host) {
      std::error_code time_ec;
      const auto modified = fs::last_write_time(temp, time_ec);
      gone = !time_ec && fs::file_time_type::clock::now() - modified > kForeignTempFileAge;
    } else if (pid == ::getpid()) {
      LiveTempFiles& live = LiveTempFiles::Get();
      MutexLock l(&live.mu);
      gone = live.paths.count(temp) == 0;
    } else {
      gone = ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    }
    if (gone && ::unlink(temp.c_str()) == 0) {
      Warn(absl::StrCat(
          node, ": removed leftover temporary cache file ", temp,
          this_host ? absl::StrCat(" (an unfinished write by process ", pid, ", which is gone)")
                    : " (an unfinished write on another machine, unchanged for "
                      "an hour)"));
    }
  }
}

std::string EncodeFixed64(uint64_t v) {
  char b[8];
  tfrecord::EncodeFixed64(b, v);
  return std::string(b, 8);
}

// Writes a cache file under a temporary name; Finish() renames it into place.
class CacheFileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<CacheFileWriter>> Create(
      const std::string& path, const proto::SavedDatasetManifest& identity) {
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);  // Create() reports a failure.
    std::random_device rd;
    const uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    std::unique_ptr<AtomicFile> file;
    {
      // Registered before any cleanup in this process can see the file.
      LiveTempFiles& live = LiveTempFiles::Get();
      MutexLock l(&live.mu);
      SLUICE_ASSIGN_OR_RETURN(file, AtomicFile::Create(path));
      live.paths.insert(file->temp_path());
    }
    auto writer = std::unique_ptr<CacheFileWriter>(new CacheFileWriter(std::move(file), id));
    SLUICE_RETURN_IF_ERROR(writer->WriteRecord(
        absl::StrCat(kHeaderMagic, EncodeFixed64(id), identity.SerializeAsString())));
    return writer;
  }

  ~CacheFileWriter() {
    file_->Abandon();  // No-op once committed.
    LiveTempFiles& live = LiveTempFiles::Get();
    MutexLock l(&live.mu);
    live.paths.erase(file_->temp_path());
  }

  absl::Status Append(const Element& element) {
    SLUICE_RETURN_IF_ERROR(SerializeElementRecord(element, "Cache", &record_));
    SLUICE_RETURN_IF_ERROR(WriteRecord(record_));
    ++count_;
    return absl::OkStatus();
  }

  absl::Status Finish() {
    SLUICE_RETURN_IF_ERROR(
        WriteRecord(absl::StrCat(kFooterMagic, EncodeFixed64(count_), EncodeFixed64(id_))));
    return file_->Commit();
  }

  const std::string& temp_path() const { return file_->temp_path(); }

 private:
  CacheFileWriter(std::unique_ptr<AtomicFile> file, uint64_t id)
      : file_(std::move(file)), id_(id) {}

  absl::Status WriteRecord(absl::string_view payload) {
    char header[tfrecord::kHeaderSize];
    tfrecord::EncodeHeader(header, payload.size());
    char footer[tfrecord::kFooterSize];
    tfrecord::EncodeFixed32(footer, MaskCrc32c(Crc32c(payload)));
    SLUICE_RETURN_IF_ERROR(file_->Append(absl::string_view(header, sizeof(header))));
    SLUICE_RETURN_IF_ERROR(file_->Append(payload));
    return file_->Append(absl::string_view(footer, sizeof(footer)));
  }

  std::unique_ptr<AtomicFile> file_;
  uint64_t id_;
  int64_t count_ = 0;
  std::string record_;
};

// A complete cache file, opened for reading its elements.
struct CacheFile {
  std::unique_ptr<TFRecordReader> reader;  // at element 0
  uint64_t id = 0;
  int64_t count = 0;
  uint64_t elements_end = 0;  // offset of the footer record
};

// The outcome of looking at `path`: a valid file, no file, or why the file is no good.
struct OpenResult {
  std::optional<CacheFile> file;
  std::string invalid;  // non-empty: the file exists and must not be used
  // The file looked at, so that an invalid one is removed only while it is still the one at `path`
  // (a writer may have renamed a good one into place since).
  dev_t device = 0;
  ino_t inode = 0;
};

// Removes the invalid file `opened` looked at, unless another has taken its place.
void RemoveInvalid(const std::string& path, const OpenResult& opened) {
  struct stat now;
  if (::stat(path.c_str(), &now) == 0 && now.st_dev == opened.device &&
      now.st_ino == opened.inode) {
    ::unlink(path.c_str());
  }
}

absl::StatusOr<OpenResult> OpenCacheFile(const std::string& path,
                                         const proto::SavedDatasetManifest& identity) {
  OpenResult result;
  struct stat before;
  if (::stat(path.c_str(), &before) == 0) {
    result.device = before.st_dev;
    result.inode = before.st_ino;
  }
  auto reader = TFRecordReader::Open(path);
  if (!reader.ok()) {
    if (absl::IsNotFound(reader.status())) return result;
    return reader.status();
  }
  std::string header;
  auto more = (*reader)->ReadRecord(&header);
  if (!more.ok() || !*more || !absl::StartsWith(header, kHeaderMagic) ||
      header.size() < kHeaderMagic.size() + 8) {
    if (!more.ok() && !absl::IsDataLoss(more.status())) return more.status();
    result.invalid = "not a sluice cache file (no valid header record)";
    return result;
  }
  const uint64_t id = tfrecord::DecodeFixed64(header.data() + kHeaderMagic.size());
  proto::SavedDatasetManifest written_for;
  if (!written_for.ParseFromString(header.substr(kHeaderMagic.size() + 8))) {
    result.invalid = "not a sluice cache file (its header does not parse)";
    return result;
  }
  result.invalid = StaleReason(written_for, identity);
  if (!result.invalid.empty()) return result;
  // The footer: the last kFooterRecord bytes.
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return absl::InternalError(absl::StrCat(path, ": cannot get its size: ", ec.message()));
  const uint64_t elements_begin = (*reader)->offset();
  const char* incomplete = "incomplete: it lacks a valid end record (truncated?)";
  if (size < elements_begin + kFooterRecord) {
    result.invalid = incomplete;
    return result;
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> in, FileInputStream::Open(path, false));
  SLUICE_RETURN_IF_ERROR(in->Seek(size - kFooterRecord));
  char f[kFooterRecord];
  SLUICE_ASSIGN_OR_RETURN(const size_t got, ReadUpTo(*in, f, kFooterRecord));
  const char* payload = f + tfrecord::kHeaderSize;
  if (got != kFooterRecord || !tfrecord::HeaderCrcOk(f) ||
      tfrecord::DecodeFixed64(f) != kFooterPayload ||
      tfrecord::DecodeFixed32(payload + kFooterPayload) !=
          MaskCrc32c(Crc32c(absl::string_view(payload, kFooterPayload))) ||
      absl::string_view(payload, kFooterMagic.size()) != kFooterMagic ||
      tfrecord::DecodeFixed64(payload + 24) != id) {
    result.invalid = incomplete;
    return result;
  }
  const uint64_t count = tfrecord::DecodeFixed64(payload + 16);
  // Each element takes at least the framing: a count the file cannot hold is corrupt.
  if (count > (size - kFooterRecord - elements_begin) / tfrecord::kOverhead) {
    result.invalid = absl::StrCat("its end record claims ", count, " elements, more than fit");
    return result;
  }
  result.file =
      CacheFile{std::move(*reader), id, static_cast<int64_t>(count), size - kFooterRecord};
  return result;
}

class FileCacheIterator : public IteratorBase {
 public:
  // Reads `file` when given, else writes what `input` yields.
  FileCacheIterator(const CacheDataset* d, const IteratorContext& ctx,
                    proto::SavedDatasetManifest identity, std::optional<CacheFile> file,
                    std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync),
        d_(d),
        identity_(std::move(identity)),
        input_(std::move(input)),
        // The identity from before the input was read: a file changed while it is read makes the
        // next pass rebuild the cache.
        write_([this] { return CacheFileWriter::Create(d_->path(), identity_); },
               // The cache is an optimisation: failing to write it is worth a warning.
               [d](const absl::Status& why) {
                 Warn(absl::StrCat(d->name(), ": cannot write cache file ", d->path(), " (",
                                   why.message(), "); going on without caching"));
               },
               /*may_write=*/!file.has_value()) {
    if (file) file_ = std::move(*file);
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    return reading() ? ReadNext() : WriteNext();
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["reading"] = reading();
    ints["position"] = position_;
    ints["failed"] = failed_;
    if (reading()) {
      ints["offset"] = static_cast<int64_t>(file_.reader->offset());
      ints["count"] = file_.count;
      ints["file_id"] = std::bit_cast<int64_t>(file_.id);
    }
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t reading, SavedInt(state, "reading"));
    SLUICE_ASSIGN_OR_RETURN(position_, SavedInt(state, "position"));
    SLUICE_ASSIGN_OR_RETURN(int64_t failed, SavedInt(state, "failed"));
    failed_ = failed != 0;
    if (reading != 0) {
      input_.reset();
      write_.Reset(false);
      return RestoreReading(state);
    }
    file_ = CacheFile{};
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    // Elements before `position_` are not in any file we could append to: only a pass restored
    // at its start can still write the cache.
    write_.Reset(/*may_write=*/in != nullptr && position_ == 0 && !failed_);
    if (in == nullptr) {
      input_.reset();  // The pass had ended.
      return absl::OkStatus();
    }
    if (input_ == nullptr) {  // This iterator was made to read: it needs its input after all.
      SLUICE_ASSIGN_OR_RETURN(input_, d_->inputs()[0]->MakeIterator(ctx()));
    }
    return input_->Restore(*in);
  }

 private:
  bool reading() const { return file_.reader != nullptr; }

  absl::StatusOr<std::optional<Element>> ReadNext() {
    if (position_ >= file_.count) {
      if (!failed_ && file_.reader->offset() != file_.elements_end) {
        return Corrupt(absl::StrCat(d_->path(), ": ", file_.count, " elements end at offset ",
                                    file_.reader->offset(), ", but the end record is at ",
                                    file_.elements_end));
      }
      if (!failed_) d_->ClearFileReadFailures();  // a whole replay read
      return std::nullopt;
    }
    if (failed_) return std::nullopt;
    absl::StatusOr<bool> more = file_.reader->ReadRecord(&record_);
    // An I/O error says nothing about the file's contents: the first pass it fails keeps the
    // file; a second in a row (a bad sector) removes it. A record longer than the reader allows
    // (ResourceExhausted) is corruption: no element that large is written.
    if (!more.ok() && !absl::IsDataLoss(more.status()) &&
        !absl::IsResourceExhausted(more.status())) {
      const std::string where =
          absl::StrCat("reading cache file ", d_->path(), " at element ", position_);
      if (d_->NoteFileReadFailure() < 2) {
        EndPass();
        return WithContext(more.status(), absl::StrCat(where,
                                                       " (kept: the next pass reads it again, and "
                                                       "removes it if that fails too): "));
      }
      RemoveFileAndEndPass();
      return WithContext(more.status(),
                         absl::StrCat(where,
                                      " (the second pass in a row to fail: removed it, "
                                      "the next pass reads the input again): "));
    }
    if (!more.ok()) return Corrupt(std::string(more.status().message()));
    if (!*more || file_.reader->offset() > file_.elements_end) {
      return Corrupt(absl::StrCat(d_->path(), ": element ", position_,
                                  " runs into the end record at offset ", file_.elements_end));
    }
    proto::ElementProto p;
    if (!p.ParseFromString(record_)) {
      return Corrupt(
          absl::StrCat(d_->path(), ": record ", position_ + 1, " does not parse as an element"));
    }
    absl::StatusOr<Element> e = ElementFromProto(p);
    // Elements of another type than the input's are no cache of it, whatever the file says.
    const absl::Status valid = e.ok() ? d_->element_spec().Check(*e) : e.status();
    if (!valid.ok()) {
      return Corrupt(absl::StrCat(d_->path(), ": record ", position_ + 1, ": ", valid.message()));
    }
    ++position_;
    return std::optional<Element>(std::move(*e));
  }

  // The file passed the checks of its header and end record, yet a record is bad. Elements were
  // already returned, so the pass cannot switch to the input: it fails, then ends; the file goes,
  // so that the next pass rebuilds it.
  absl::Status Corrupt(const std::string& what) {
    RemoveFileAndEndPass();
    return absl::DataLossError(absl::StrCat("corrupt cache file: ", what,
                                            "; removed it, the next pass reads the input again"));
  }

  void RemoveFileAndEndPass() {
    EndPass();
    d_->ClearFileReadFailures();  // the next file starts with a clean record
    // Unless a writer has replaced it with a new file meanwhile.
    auto now = OpenCacheFile(d_->path(), identity_);
    if (now.ok() && now->file && now->file->id == file_.id) ::unlink(d_->path().c_str());
  }

  // After an error: the pass ends (IgnoreErrors downstream would otherwise spin).
  void EndPass() {
    failed_ = true;
    position_ = file_.count;
  }

  absl::StatusOr<std::optional<Element>> WriteNext() {
    if (input_ == nullptr) return std::nullopt;
    absl::StatusOr<std::optional<Element>> in = write_.Pass(*input_);
    if (!in.ok()) failed_ = true;
    if (in.ok() && !in->has_value()) input_.reset();
    if (in.ok() && in->has_value()) ++position_;
    return in;
  }

  absl::Status RestoreReading(const proto::IteratorStateProto& state) {
    SLUICE_ASSIGN_OR_RETURN(int64_t count, SavedInt(state, "count"));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, SavedInt(state, "offset"));
    SLUICE_ASSIGN_OR_RETURN(int64_t id, SavedInt(state, "file_id"));
    if (file_.reader == nullptr || file_.id != std::bit_cast<uint64_t>(id)) {
      SLUICE_ASSIGN_OR_RETURN(OpenResult opened, OpenCacheFile(d_->path(), identity_));
      std::string why = opened.invalid;
      if (why.empty() && !opened.file) why = "it does not exist";
      if (why.empty() && opened.file->id != std::bit_cast<uint64_t>(id)) {
        why = "it was rewritten since (another id)";
      }
      if (!why.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat(d_->name(), ": the checkpoint was reading cache file ", d_->path(),
                         " at element ", position_, ", but ", why));
      }
      file_ = std::move(*opened.file);
    }
    if (file_.count != count || position_ < 0 || position_ > count) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", d_->name(), " is at element ",
                                              position_, " of ", count, " in ", d_->path(),
                                              ", which holds ", file_.count));
    }
    return file_.reader->Seek(static_cast<uint64_t>(offset), position_ + 1);
  }

  const CacheDataset* d_;
  const proto::SavedDatasetManifest identity_;  // what the cache file must have been written for
  std::unique_ptr<IteratorBase> input_;         // writing; null when reading or ended
  CacheFile file_;                              // reading when file_.reader is set
  WriteThrough<CacheFileWriter> write_;
  int64_t position_ = 0;  // elements returned
  bool failed_ = false;   // writing: the input returned an error; reading: the file is corrupt
  std::string record_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IteratorBase>> MakeFileCacheIterator(const CacheDataset* d,
                                                                    const IteratorContext& ctx) {
  const std::string& path = d->path();
  RemoveLeftoverTempFiles(path, d->name());
  SLUICE_ASSIGN_OR_RETURN(proto::SavedDatasetManifest identity,
                          DescribeSavedInput(*d->inputs()[0], /*user_fingerprint=*/""));
  SLUICE_ASSIGN_OR_RETURN(OpenResult opened, OpenCacheFile(path, identity));
  if (!opened.invalid.empty()) {
    RemoveInvalid(path, opened);
    Warn(absl::StrCat(d->name(), ": discarded cache file ", path, ": ", opened.invalid,
                      "; reading the input again"));
  }
  std::unique_ptr<IteratorBase> input;
  if (!opened.file) {
    SLUICE_ASSIGN_OR_RETURN(input, d->inputs()[0]->MakeIterator(ctx));
  }
  return std::unique_ptr<IteratorBase>(
      new FileCacheIterator(d, ctx, std::move(identity), std::move(opened.file), std::move(input)));
}

}  // namespace sluice::internal
