#include "train/callbacks/terminate_on_nan.h"

#include <cmath>

namespace sluice::train::callbacks {

absl::Status TerminateOnNaN::OnTrainBegin(const Logs&) {
  terminated_at_step_.reset();
  return absl::OkStatus();
}

absl::Status TerminateOnNaN::OnBatchEnd(int64_t batch, const Logs& logs) {
  const auto loss = logs.find("loss");
  if (loss == logs.end() || std::isfinite(loss->second)) return absl::OkStatus();
  terminated_at_step_ = trainer()->global_step();
  if (out_ != nullptr) {
    std::fprintf(out_, "Batch %lld: invalid loss, terminating training\n",
                 static_cast<long long>(batch));
  }
  trainer()->StopTraining();
  return absl::OkStatus();
}

}  // namespace sluice::train::callbacks
