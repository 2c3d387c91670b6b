#include "train/recipes/skipped_records.h"

namespace sluice::train::recipes {

void SkippedRecords::Add(const absl::Status& status) {
  MutexLock l(&mu_);
  if (first_.empty()) first_ = std::string(status.message());
  if (distinct_.size() < kMaxTracked) distinct_.insert(std::string(status.message()));
}

int64_t SkippedRecords::count() const {
  MutexLock l(&mu_);
  return static_cast<int64_t>(distinct_.size());
}

std::string SkippedRecords::first() const {
  MutexLock l(&mu_);
  return first_;
}

}  // namespace sluice::train::recipes
