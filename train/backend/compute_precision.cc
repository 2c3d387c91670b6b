#include "train/backend/compute_precision.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::backend {
namespace {

thread_local Precision current_precision = Precision::kFloat32;

}  // namespace

bool CpuHasAvx512Bf16() {
#if defined(__x86_64__) || defined(__i386__)
  // Every CPU with AVX512-BF16 has BW and VL too; kernels that use it may need them.
  static const bool has = __builtin_cpu_supports("avx512bf16") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return has;
#else
  return false;
#endif
}

std::string PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFloat32:
      return "float32";
    case Precision::kMixedBFloat16:
      return "mixed_bfloat16";
    case Precision::kMixedFloat16:
      return "mixed_float16";
  }
  return "?";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  for (Precision p : {Precision::kFloat32, Precision::kMixedBFloat16, Precision::kMixedFloat16}) {
    if (name == PrecisionName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("precision: want float32, mixed_bfloat16 or mixed_float16, got '", name, "'"));
}

absl::Status CheckPrecisionSupported(const Device& device, Precision p) {
  if (p == Precision::kFloat32 || !device.is_cpu()) return absl::OkStatus();
  if (p == Precision::kMixedFloat16) {
    return absl::FailedPreconditionError(
        "mixed_float16 runs on CUDA devices only: on the CPU, use mixed_bfloat16 (the CPU "
        "computes float16 through oneDNN only on AVX512-FP16 or AMX-FP16 parts)");
  }
  if (!CpuHasAvx512Bf16()) {
    return absl::FailedPreconditionError(
        "mixed_bfloat16 on the CPU needs the AVX512-BF16 instruction set (avx512_bf16 in "
        "/proc/cpuinfo; AMX-BF16 parts have it too), which this processor lacks: train in "
        "float32");
  }
  return absl::OkStatus();
}

Precision CurrentPrecision() { return current_precision; }

ScopedPrecision::ScopedPrecision(Precision p) : previous_(current_precision) {
  current_precision = p;
}

ScopedPrecision::~ScopedPrecision() { current_precision = previous_; }

}  // namespace sluice::train::backend
