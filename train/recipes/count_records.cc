#include "train/recipes/count_records.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "io/glob.h"
#include "io/record_index.h"

namespace sluice::train::recipes {

absl::StatusOr<int64_t> CountRecords(const std::string& pattern,
                                     const CountRecordsOptions& options) {
  const int64_t limit = options.limit;
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> files, Glob(pattern));
  int64_t count = 0;
  for (const std::string& file : files) {
    if (limit >= 0 && count >= limit) break;
    absl::StatusOr<RecordIndex> index = RecordIndex::Build(file);
    if (index.ok()) {
      count += index->size();
      continue;
    }
    if (!options.skip_errors) return index.status();
    auto records = Dataset::TFRecord(file, {.skip_corrupt = true}).IgnoreErrors().MakeIterator();
    while (limit < 0 || count < limit) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> next, records->GetNext());
      if (!next) break;
      ++count;
    }
  }
  return limit >= 0 ? std::min(count, limit) : count;
}

}  // namespace sluice::train::recipes
