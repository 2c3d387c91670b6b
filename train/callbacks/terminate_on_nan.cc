#include "train/callbacks/terminate_on_nan.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::train::callbacks {

absl::Status TerminateOnNaN::OnTrainBegin(const Logs&) {
  terminated_at_step_.reset();
  return absl::OkStatus();
}

absl::Status TerminateOnNaN::OnBatchEnd(int64_t batch, const Logs& logs) {
  const auto loss = logs.find("loss");
  if (loss == logs.end() || std::isfinite(loss->second)) return absl::OkStatus();
  terminated_at_step_ = trainer()->global_step();
  if (action_ == Action::kFail) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TerminateOnNaN: the loss is ", std::isnan(loss->second) ? "NaN" : "infinite",
        " after global step ", *terminated_at_step_, " (epoch ", trainer()->epoch() + 1, ", batch ",
        batch + 1,
        "): training stopped there. A learning rate too high diverges (lower it, or clip the "
        "gradients' norm); a NaN or an Inf in the data or from an op is named by check numerics "
        "(autodiff::EnableCheckNumerics, sluice train --check-numerics)"));
  }
  if (out_ != nullptr) {
    std::fprintf(out_, "Batch %lld: invalid loss, terminating training\n",
                 static_cast<long long>(batch));
  }
  trainer()->StopTraining();
  return absl::OkStatus();
}

}  // namespace sluice::train::callbacks
