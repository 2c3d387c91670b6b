#ifndef SLUICE_TESTS_SKIPPED_LOG_H_
#define SLUICE_TESTS_SKIPPED_LOG_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/mutex.h"

namespace sluice::testing {

// The errors a pipeline skipped (an `on_skipped` callback's), from whichever threads skipped them.
class SkippedLog {
 public:
  void Add(const absl::Status& why) {
    MutexLock l(&mu_);
    messages_.emplace_back(why.message());
  }
  // A callback that adds to this log, which must outlive it.
  std::function<void(const absl::Status&)> Callback() {
    return [this](const absl::Status& why) { Add(why); };
  }
  std::vector<std::string> messages() const {
    MutexLock l(&mu_);
    return messages_;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> messages_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SKIPPED_LOG_H_
