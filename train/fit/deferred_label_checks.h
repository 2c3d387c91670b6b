#ifndef SLUICE_TRAIN_FIT_DEFERRED_LABEL_CHECKS_H_
#define SLUICE_TRAIN_FIT_DEFERRED_LABEL_CHECKS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "train/ops/cross_entropy.h"

namespace sluice::train::fit {

// The label range checks of the steps since the loop last read from the device. Checking them
// all sums their counts on the device and reads that one number back; only when it is not zero
// are the checks run one by one, to name the first bad label and its step.
class DeferredLabelChecks {
 public:
  // `context` names the step in an error ("Fit: epoch 2, step 7: ").
  void Add(std::string context, ops::LabelRangeCheck check);
  // OK, or the first failed check's error after its context; clears the checks either way.
  absl::Status CheckAll();
  size_t size() const { return checks_.size(); }
  void Clear() { checks_.clear(); }

 private:
  std::vector<std::pair<std::string, ops::LabelRangeCheck>> checks_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_DEFERRED_LABEL_CHECKS_H_
