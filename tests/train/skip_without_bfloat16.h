#ifndef SLUICE_TESTS_TRAIN_SKIP_WITHOUT_BFLOAT16_H_
#define SLUICE_TESTS_TRAIN_SKIP_WITHOUT_BFLOAT16_H_

#include <gtest/gtest.h>

#include "core/device.h"
#include "train/backend/compute_precision.h"

// Skips the test, saying why, where the CPU cannot run mixed_bfloat16 (no AVX512-BF16: an AVX2
// EPYC, for one), whose oneDNN primitives would not be created.
#define SLUICE_SKIP_WITHOUT_CPU_BFLOAT16()                                                 \
  if (const absl::Status bf16_support = ::sluice::train::backend::CheckPrecisionSupported( \
          ::sluice::Device::Cpu(), ::sluice::train::backend::Precision::kMixedBFloat16);   \
      !bf16_support.ok())                                                                  \
  GTEST_SKIP() << bf16_support.message()

#endif  // SLUICE_TESTS_TRAIN_SKIP_WITHOUT_BFLOAT16_H_
