#include "train/metrics/mean_absolute_error.h"

#include <utility>

#include "train/losses/mean_absolute_error.h"

namespace sluice::train::metrics {

// The loss's per-example values are the metric's, as Keras uses one function for both.
MeanAbsoluteError::MeanAbsoluteError(std::string name)
    : MeanMetricWrapper(std::move(name), [](const Tensor& y_true, const Tensor& y_pred) {
        return losses::MeanAbsoluteError().PerExample(y_true, y_pred);
      }) {}

}  // namespace sluice::train::metrics
