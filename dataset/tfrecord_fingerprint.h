#ifndef SLUICE_DATASET_TFRECORD_FINGERPRINT_H_
#define SLUICE_DATASET_TFRECORD_FINGERPRINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataset/proto/iterator_state.pb.h"
#include "io/tfrecord_reader.h"

namespace sluice {

// What a TFRecord iterator's checkpoint keeps to recognise a file it was reading: the file's
// size, and the last record read before the saved position (its index, where it starts and the
// data CRC its footer stores). An uncompressed file is restored by seeking to the saved offset,
// so a file rewritten with other records at the same offsets would otherwise resume in the
// middle of other data, silently. A restore reads that one record again: a different size, a
// record that is not there or has another CRC is DataLoss asking "has the file changed?".
//
// The mtime is not kept: copying a dataset to a new machine's disk (the usual resume after a
// preemption) changes it and nothing else. Records far from the position are not compared: a
// file rewritten there, at the same size, resumes (the records it returns are then the new
// file's, at valid record boundaries).
struct TFRecordFingerprint {
  int64_t size = -1;    // of the file in bytes; -1: not known (nothing is compared)
  int64_t record = -1;  // the last record's index; -1: none read before the position
  int64_t offset = 0;   // where it starts, in the uncompressed stream
  uint32_t crc = 0;     // its data CRC, masked, as its footer stores it

  // Of `reader`'s file, at the reader's position.
  static TFRecordFingerprint Of(const TFRecordReader& reader);
  // Into `state` under `prefix` ("slot0." or ""): "file_size", and "last_record", "last_offset"
  // and "last_crc" when a record was read.
  void Save(const std::string& prefix, proto::IteratorStateProto* state) const;
  // From `state` under `prefix`, for a position at `record` and `offset`. A checkpoint written
  // before fingerprints holds none: an empty one, which checks nothing (it restores as it did).
  // DataLoss for values no reader could have saved.
  static absl::StatusOr<TFRecordFingerprint> Restore(const proto::IteratorStateProto& state,
                                                     const std::string& prefix, int64_t record,
                                                     int64_t offset);

  // Whether the file still has the saved size.
  absl::Status CheckSize(const std::string& path) const;
  // Reads the next record of `reader`, positioned at this fingerprint's record, and compares it
  // with the saved one: DataLoss naming the file when it differs.
  absl::Status CheckRecord(TFRecordReader& reader) const;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_TFRECORD_FINGERPRINT_H_
