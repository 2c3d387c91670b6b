#ifndef SLUICE_TRAIN_DATA_FILE_RECORDS_H_
#define SLUICE_TRAIN_DATA_FILE_RECORDS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "dataset/dataset.h"

namespace sluice::train::data {

// Component positions in FileRecords' elements.
inline constexpr size_t kRecordComponent = 0, kIndexComponent = 1, kFileComponent = 2;

// The records of one TFRecord file as {record, index in the file, file} (`options` with_index,
// the file one tensor its records share), so that a later error about a record (one that fails to
// parse or decode) names it: the training pipelines' per-file source, under their Interleave.
Dataset FileRecords(const std::string& file, TFRecordOptions options);

// `status` after "FILE: record N: " (the reader's own errors' words); "FILE: " for index < 0 (a
// file that is one image, not a record).
absl::Status AtRecord(const absl::Status& status, absl::string_view file, int64_t index);

}  // namespace sluice::train::data

#endif  // SLUICE_TRAIN_DATA_FILE_RECORDS_H_
