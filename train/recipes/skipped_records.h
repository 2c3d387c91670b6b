#ifndef SLUICE_TRAIN_RECIPES_SKIPPED_RECORDS_H_
#define SLUICE_TRAIN_RECIPES_SKIPPED_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "core/mutex.h"

namespace sluice::train::recipes {

// What a pipeline with skip_errors skipped, from any of its threads (the on_skipped callback of
// data::ImageDatasetOptions and data::ImageDirectoryOptions). A bad training record is met again
// on each pass over the data; its error message (file, record, offset), less the pipeline node's
// "Map[2] at element 17: " that changes from pass to pass, tells it apart from other records, so
// each record counts once, however many passes meet it.
class SkippedRecords {
 public:
  void Add(const absl::Status& status);

  // The distinct records skipped (at most kMaxTracked), and the first one's error message.
  int64_t count() const;
  std::string first() const;

  // Bounds the memory a hopeless set can take.
  static constexpr size_t kMaxTracked = 100000;

 private:
  mutable Mutex mu_;
  std::set<std::string> distinct_ ABSL_GUARDED_BY(mu_);
  std::string first_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_SKIPPED_RECORDS_H_
