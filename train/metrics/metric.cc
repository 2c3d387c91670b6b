#include "train/metrics/metric.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"
#include "train/ops/cast.h"
#include "train/ops/reduce.h"

namespace sluice::train::metrics {

namespace internal {

absl::Status CheckSparseLabels(absl::string_view metric, const Tensor& labels,
                               const Tensor& predictions) {
  if (predictions.dtype() != DType::kFloat32 || predictions.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(metric, ": predictions must be float32 [N, C], got ",
                     DTypeName(predictions.dtype()), predictions.shape().DebugString()));
  }
  const bool label_dtype_ok = labels.dtype() == DType::kInt32 || labels.dtype() == DType::kInt64;
  const bool label_shape_ok = labels.rank() == 1 || (labels.rank() == 2 && labels.dim(1) == 1);
  if (!label_dtype_ok || !label_shape_ok || labels.num_elements() != predictions.dim(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(metric, ": labels must be int32 or int64 [", predictions.dim(0),
                     "] to match predictions ", predictions.shape().DebugString(), ", got ",
                     DTypeName(labels.dtype()), labels.shape().DebugString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<LabelledRows> OneHotToIndices(absl::string_view metric, const Tensor& y_true,
                                             const Tensor& y_pred) {
  const bool label_dtype_ok = y_true.dtype() == DType::kFloat32 ||
                              y_true.dtype() == DType::kInt32 || y_true.dtype() == DType::kInt64;
  if (y_pred.dtype() != DType::kFloat32 || y_pred.rank() < 2 || !label_dtype_ok ||
      y_true.shape() != y_pred.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        metric, ": want one-hot labels y_true of y_pred's shape and y_pred float32 [N, ..., C], ",
        "got y_true ", DTypeName(y_true.dtype()), y_true.shape().DebugString(), " and y_pred ",
        DTypeName(y_pred.dtype()), y_pred.shape().DebugString(),
        " (class indices take the sparse_* metrics)"));
  }
  const int64_t classes = y_pred.dim(y_pred.rank() - 1);
  const int64_t rows = classes == 0 ? 0 : y_pred.num_elements() / classes;
  SLUICE_ASSIGN_OR_RETURN(Tensor one_hot, ops::Cast(y_true, DType::kFloat32));
  SLUICE_ASSIGN_OR_RETURN(Tensor labels, ops::ArgMax(one_hot));
  LabelledRows out;
  SLUICE_ASSIGN_OR_RETURN(out.labels, labels.Reshape(Shape{rows}));
  SLUICE_ASSIGN_OR_RETURN(out.predictions, y_pred.Reshape(Shape{rows, classes}));
  return out;
}

}  // namespace internal

absl::StatusOr<double> Metric::total() const {
  if (!pending_ || refill_) return total_;
  SLUICE_ASSIGN_OR_RETURN(float pending, backend::ReadScalar(*pending_));
  return total_ + pending;
}

absl::StatusOr<double> Metric::Result() const {
  SLUICE_ASSIGN_OR_RETURN(double total, this->total());
  return count_ > 0 ? total / count_ : 0.0;
}

void Metric::Reset() { SetState(0, 0); }

void Metric::SetState(double total, double count) {
  // The tensor stays (a traced update adds to it): the next PrepareOn refills it.
  refill_ = pending_.has_value();
  total_ = total;
  count_ = count;
}

void Metric::Accumulate(double total, double count) {
  // Host numbers: inside a traced step, added again at every replay.
  backend::AtEveryCall([this, total, count] {
    total_ += total;
    count_ += count;
  });
}

absl::Status Metric::PrepareOn(const Device& device) {
  const bool moved = pending_ && !(pending_->device() == device);
  if (pending_ && !refill_ && !moved) return absl::OkStatus();
  if (backend::Tracing()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot trace this step: metric '", name(), "' is updated before its running total is on ",
        device.DebugString(), " (call PrepareOn before the traced function)"));
  }
  if (moved) {
    // The updates moved to another device: the chain continues there.
    SLUICE_ASSIGN_OR_RETURN(total_, total());
    pending_.reset();
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(device));
  if (!pending_) {
    SLUICE_ASSIGN_OR_RETURN(pending_, backend->Allocate(DType::kFloat32, Shape{1}));
  }
  // The chain starts from the host total as a float32: a restored run adds its next batch to the
  // same value as the run it resumes.
  SLUICE_RETURN_IF_ERROR(backend->Fill(*pending_, static_cast<float>(total_)));
  total_ = 0;
  refill_ = false;
  return absl::OkStatus();
}

absl::Status Metric::AccumulateSum(const Tensor& values, float scale, double count) {
  if (values.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": the values to add must be float32, got ", DTypeName(values.dtype())));
  }
  SLUICE_RETURN_IF_ERROR(PrepareOn(values.device()));
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(pending_->device()));
  SLUICE_RETURN_IF_ERROR(backend->AccumulateSum(values, scale, *pending_));
  // A host number: a replay of a traced update counts again.
  backend::AtEveryCall([this, count] { count_ += count; });
  return absl::OkStatus();
}

}  // namespace sluice::train::metrics
