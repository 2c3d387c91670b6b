#ifndef SLUICE_TRAIN_OPS_PADDING_H_
#define SLUICE_TRAIN_OPS_PADDING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace sluice::train::ops {

// TF's padding modes for windowed ops (convolution, pooling).
enum class Padding {
  kValid,     // no padding: windows lie inside the input
  kSame,      // output size ceil(in / stride); the extra padding goes at the end
  kExplicit,  // the options' Pads, as ONNX and PyTorch give them
};

// The padding before and after each spatial dim with Padding::kExplicit (ignored otherwise).
// Convolutions pad with zeros; pooling never counts padded positions.
struct Pads {
  int64_t top = 0;
  int64_t bottom = 0;
  int64_t left = 0;
  int64_t right = 0;
};

// Keras' names, "valid" and "same", "explicit" for kExplicit, and back (InvalidArgument for
// another name).
const char* PaddingName(Padding padding);
absl::StatusOr<Padding> ParsePadding(const std::string& name);

// One spatial dim of a windowed op.
struct Window {
  int64_t out = 0;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};

// Output size and padding as TF computes them, for an input of `in`, a
// kernel of `kernel` taps `dilation` apart, and `stride`; with kExplicit, `pad_before` and
// `pad_after` (each in [0, the kernel's span), as oneDNN and cuDNN take them).
absl::StatusOr<Window> ComputeWindow(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                     Padding padding, int64_t pad_before = 0,
                                     int64_t pad_after = 0);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_PADDING_H_
