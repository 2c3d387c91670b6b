#include "dataset/tfrecord_fingerprint.h"

#include <filesystem>
#include <limits>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

constexpr char kChanged[] = " (has the file changed?)";

// The file's size, or -1 when it cannot be read (a file that vanished fails at its next open).
int64_t FileSize(const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  return error ? -1 : static_cast<int64_t>(size);
}

}  // namespace

TFRecordFingerprint TFRecordFingerprint::Of(const TFRecordReader& reader) {
  TFRecordFingerprint f{.size = FileSize(reader.path())};
  const TFRecordReader::RecordMark& last = reader.last_record();
  if (last.index >= 0) {
    f.record = last.index;
    f.offset = static_cast<int64_t>(last.offset);
    f.crc = last.crc;
  }
  return f;
}

void TFRecordFingerprint::Save(const std::string& prefix, proto::IteratorStateProto* state) const {
  auto& ints = *state->mutable_ints();
  ints[prefix + "file_size"] = size;
  if (record < 0) return;
  ints[prefix + "last_record"] = record;
  ints[prefix + "last_offset"] = offset;
  ints[prefix + "last_crc"] = crc;
}

absl::StatusOr<TFRecordFingerprint> TFRecordFingerprint::Restore(
    const proto::IteratorStateProto& state, const std::string& prefix, int64_t record,
    int64_t offset) {
  TFRecordFingerprint f;
  if (!state.ints().contains(prefix + "file_size")) return f;
  SLUICE_ASSIGN_OR_RETURN(f.size, SavedInt(state, prefix + "file_size"));
  if (state.ints().contains(prefix + "last_record")) {
    SLUICE_ASSIGN_OR_RETURN(f.record, SavedInt(state, prefix + "last_record"));
    SLUICE_ASSIGN_OR_RETURN(f.offset, SavedInt(state, prefix + "last_offset"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t crc, SavedInt(state, prefix + "last_crc"));
    // The record lies before the position (a record takes 16 bytes at least).
    if (f.record < 0 || f.record >= record || f.offset < 0 || f.offset > offset - 16 || crc < 0 ||
        crc > std::numeric_limits<uint32_t>::max()) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint of ", state.node(), ": ", prefix, "last record ", f.record, " at offset ",
          f.offset, " with CRC ", crc, " cannot precede record ", record, " at offset ", offset));
    }
    f.crc = static_cast<uint32_t>(crc);
  }
  if (f.size < -1) {
    return absl::DataLossError(
        absl::StrCat("checkpoint of ", state.node(), ": ", prefix, "file size ", f.size));
  }
  return f;
}

absl::Status TFRecordFingerprint::CheckSize(const std::string& path) const {
  if (size < 0) return absl::OkStatus();
  const int64_t now = FileSize(path);
  if (now == size) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path, ": ", now, " bytes, but it had ", size,
                                          " when the checkpoint was saved", kChanged));
}

absl::Status TFRecordFingerprint::CheckRecord(TFRecordReader& reader) const {
  std::string bytes;
  const absl::StatusOr<bool> more = reader.ReadRecord(&bytes);
  const TFRecordReader::RecordMark& got = reader.last_record();
  const std::string where = absl::StrCat(reader.path(), ": record ", record, " at offset ", offset,
                                         ", the last read before the checkpoint's position");
  if (!more.ok()) {
    return absl::DataLossError(
        absl::StrCat(where, ", does not read again: ", more.status().message(), kChanged));
  }
  if (!*more || got.index != record) {
    return absl::DataLossError(absl::StrCat(where, ", is not there any more", kChanged));
  }
  if (got.offset != static_cast<uint64_t>(offset) || got.crc != crc) {
    return absl::DataLossError(absl::StrCat(
        where, absl::StrFormat(", had CRC 0x%08x; the file has one ", crc),
        absl::StrFormat("with CRC 0x%08x at offset %d", got.crc, got.offset), kChanged));
  }
  return absl::OkStatus();
}

}  // namespace sluice
