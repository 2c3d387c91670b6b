#ifndef SLUICE_TRAIN_BACKEND_CPU_BFLOAT16_CONVERT_H_
#define SLUICE_TRAIN_BACKEND_CPU_BFLOAT16_CONVERT_H_

#include <cstdint>

namespace sluice::train::backend::cpu {

// float32 -> bfloat16 as AVX512-BF16's VCVTNEPS2BF16 rounds, on every CPU: to nearest even,
// NaNs kept and made quiet, denormal inputs and results flushed to zero of the same sign. These
// are the bits oneDNN's bf16 kernels compute from, so a copy made here feeds them unchanged.
// Written by hand because oneDNN 2.6's reorder of a flat array ran 3.8-6.4x slower than this
// loop on the kernel arena (1.6M elements: 330 us against 87 us on 2 cores).
void FloatToBFloat16(const float* x, uint16_t* y, int64_t n);
// bfloat16 -> float32, exact (the 16 bits become the high half).
void BFloat16ToFloat(const uint16_t* x, float* y, int64_t n);
// The same two conversions on the calling thread, for kernels that convert tile by tile inside
// their own parallel loop.
void FloatToBFloat16Run(const float* x, uint16_t* y, int64_t n);
void BFloat16ToFloatRun(const uint16_t* x, float* y, int64_t n);

namespace internal {
// The same conversions without AVX512-BF16, one element at a time; FloatToBFloat16 uses them
// where the CPU lacks the instruction and tests compare the two.
uint16_t FloatToBFloat16Portable(float x);
}  // namespace internal

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_BFLOAT16_CONVERT_H_
