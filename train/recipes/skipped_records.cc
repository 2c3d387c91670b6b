#include "train/recipes/skipped_records.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace sluice::train::recipes {

namespace {

// The message without the pipeline's "Map[2] at element 17: " in front: the element's position
// changes from pass to pass (the files are shuffled), the record's own words do not.
absl::string_view WithoutElementPosition(absl::string_view message) {
  constexpr absl::string_view kAt = " at element ";
  const size_t at = message.find(kAt);
  if (at == absl::string_view::npos || message.substr(0, at).find(' ') != absl::string_view::npos) {
    return message;
  }
  size_t end = at + kAt.size();
  const size_t digits = end;
  while (end < message.size() && absl::ascii_isdigit(static_cast<unsigned char>(message[end]))) {
    ++end;
  }
  if (end == digits || !absl::StartsWith(message.substr(end), ": ")) return message;
  return message.substr(end + 2);
}

}  // namespace

void SkippedRecords::Add(const absl::Status& status) {
  MutexLock l(&mu_);
  if (first_.empty()) first_ = std::string(status.message());
  if (distinct_.size() < kMaxTracked) {
    distinct_.insert(std::string(WithoutElementPosition(status.message())));
  }
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
