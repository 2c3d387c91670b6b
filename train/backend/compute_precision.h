#ifndef SLUICE_TRAIN_BACKEND_COMPUTE_PRECISION_H_
#define SLUICE_TRAIN_BACKEND_COMPUTE_PRECISION_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"

namespace sluice::train::backend {

// Keras' mixed-precision policies. Variables, activations in memory, softmax, losses, batch
// norm statistics, reductions and optimizer updates stay float32 under every policy; the mixed
// ones let matmul and convolution, where the time goes, multiply in the low precision and sum
// in float32 (oneDNN's bf16 math mode on the CPU; cuBLAS' fast 16-bit compute types on CUDA).
enum class Precision { kFloat32, kMixedBFloat16, kMixedFloat16 };

// "float32", "mixed_bfloat16", "mixed_float16" (Keras' policy names).
std::string PrecisionName(Precision p);
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

// OK when `device` can run `p`; otherwise why not. The CPU runs mixed_bfloat16 where it has
// AVX512-BF16 or AMX-BF16 and names the missing instruction set elsewhere; it does not run
// mixed_float16 (oneDNN computes float16 only on AVX512-FP16 or AMX-FP16 parts, which this build
// does not target).
absl::Status CheckPrecisionSupported(const Device& device, Precision p);
// Whether this CPU has AVX512-BF16 (with the AVX512-BW and VL that come with it everywhere).
bool CpuHasAvx512Bf16();

// The precision the matmul and convolution kernels called from this thread may compute in, as
// torch.autocast: set by a scope around a model's forward pass, and captured by the ops' backward
// closures so that the gradients' kernels run under the forward's policy.
Precision CurrentPrecision();

class ScopedPrecision {
 public:
  explicit ScopedPrecision(Precision p);
  ~ScopedPrecision();
  ScopedPrecision(const ScopedPrecision&) = delete;
  ScopedPrecision& operator=(const ScopedPrecision&) = delete;

 private:
  Precision previous_;
};

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_COMPUTE_PRECISION_H_
