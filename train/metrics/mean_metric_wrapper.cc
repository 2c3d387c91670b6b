#include "train/metrics/mean_metric_wrapper.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"

namespace sluice::train::metrics {

MeanMetricWrapper::MeanMetricWrapper(std::string name, MetricFn fn)
    : PredictionMetric(std::move(name)), fn_(std::move(fn)) {}

absl::Status MeanMetricWrapper::Update(const Tensor& y_true, const Tensor& y_pred) {
  if (!fn_) return absl::FailedPreconditionError(absl::StrCat(name(), ": no metric function"));
  autodiff::PauseRecording pause;
  SLUICE_ASSIGN_OR_RETURN(Tensor values, fn_(y_true, y_pred));
  if (values.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": values must be float32, got ",
                                                   DTypeName(values.dtype()),
                                                   values.shape().DebugString()));
  }
  return AccumulateSum(values, 1.0f, static_cast<double>(values.num_elements()));
}

}  // namespace sluice::train::metrics
