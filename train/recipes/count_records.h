#ifndef SLUICE_TRAIN_RECIPES_COUNT_RECORDS_H_
#define SLUICE_TRAIN_RECIPES_COUNT_RECORDS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace sluice::train::recipes {

struct CountRecordsOptions {
  // Stop counting at this many (-1: count them all).
  int64_t limit = -1;
  // A file whose record headers cannot be indexed is read instead, without the records that
  // fail; otherwise its error is returned.
  bool skip_errors = false;
};

// The number of records in the TFRecord files `pattern` matches (at most `limit`). Each file's
// record headers are read with seeks past the payloads (RecordIndex::Build), so a large set costs
// a few bytes a record, not a pass over its data, and payloads are not checked: training reports a
// corrupt one (or skips it).
absl::StatusOr<int64_t> CountRecords(const std::string& pattern,
                                     const CountRecordsOptions& options = {});

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_COUNT_RECORDS_H_
