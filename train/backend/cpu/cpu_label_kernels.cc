// The CpuBackend kernels that read labels: their cast to int64 with a range
// check, and in-top-k and argmax for the accuracy metrics.

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/backend/in_top_k_row.h"

namespace sluice::train::backend::cpu {
namespace {

int64_t LabelAt(const Tensor& labels, int64_t i) {
  return labels.dtype() == DType::kInt32 ? labels.data<int32_t>()[i] : labels.data<int64_t>()[i];
}

absl::Status CheckLabels(absl::string_view kernel, const Tensor& labels, int64_t n) {
  if ((labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) ||
      labels.num_elements() != n) {
    return absl::InvalidArgumentError(absl::StrCat(kernel, ": want int32 or int64 labels [", n,
                                                   "], got ", DTypeName(labels.dtype()),
                                                   labels.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CpuBackend::CastLabels(const Tensor& labels, int64_t num_classes, Tensor& labels64,
                                    Tensor& invalid) {
  const int64_t n = labels64.num_elements();
  if (auto s = CheckLabels("CastLabels", labels, n); !s.ok()) return s;
  if (labels64.dtype() != DType::kInt64 || invalid.dtype() != DType::kFloat32 ||
      invalid.num_elements() != 1) {
    return absl::InvalidArgumentError("CastLabels: want int64 labels64 and float32 [1] invalid");
  }
  // Labels are one per example: a single pass on this thread.
  int64_t* out = labels64.data<int64_t>();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = LabelAt(labels, i);
    const bool ok = l >= 0 && l < num_classes;
    out[i] = ok ? l : 0;
    bad += ok ? 0 : 1;
  }
  invalid.data<float>()[0] = static_cast<float>(bad);
  return absl::OkStatus();
}

absl::Status CpuBackend::InTopK(const Tensor& predictions, const Tensor& labels, int k,
                                bool first_max_only, Tensor& out) {
  const int64_t n = predictions.dim(0), c = predictions.dim(1);
  if (auto s = CheckLabels("InTopK", labels, n); !s.ok()) return s;
  const float* p = predictions.data<float>();
  float* hit = out.data<float>();
  ParallelFor(
      n, std::max<int64_t>(1, 16 * 1024 / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          hit[i] = InTopKRow(p + i * c, c, LabelAt(labels, i), k, first_max_only) ? 1.0f : 0.0f;
        }
      });
  return absl::OkStatus();
}

absl::Status CpuBackend::ArgMax(const Tensor& x, Tensor& out) {
  const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  const int64_t rows = out.num_elements();
  if (x.dtype() != DType::kFloat32 || out.dtype() != DType::kInt64 || c < 1 ||
      rows * c != x.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ArgMax: want float32 x [rows, c >= 1] and int64 [rows], got ", DTypeName(x.dtype()),
        x.shape().DebugString(), " and ", DTypeName(out.dtype()), out.shape().DebugString()));
  }
  const float* p = x.data<float>();
  int64_t* o = out.data<int64_t>();
  ParallelFor(rows, std::max<int64_t>(1, 16 * 1024 / c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = ArgMaxRow(p + i * c, c);
  });
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cpu
