#include "train/ops/padding.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace sluice::train::ops {

absl::StatusOr<Window> ComputeWindow(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                     Padding padding) {
  if (kernel < 1 || stride < 1 || dilation < 1) {
    return absl::InvalidArgumentError(absl::StrCat("window: kernel ", kernel, ", stride ", stride,
                                                   " and dilation ", dilation,
                                                   " must all be >= 1"));
  }
  // A saved model's config is untrusted: no sum or product here may overflow.
  if (in < 0 || kernel - 1 > (std::numeric_limits<int64_t>::max() - 1) / dilation) {
    return absl::InvalidArgumentError(absl::StrCat("window: input size ", in, ", kernel ", kernel,
                                                   " and dilation ", dilation,
                                                   " are out of range"));
  }
  const int64_t span = (kernel - 1) * dilation + 1;
  Window w;
  if (padding == Padding::kValid) {
    if (in < span) {
      return absl::InvalidArgumentError(absl::StrCat("window: input size ", in,
                                                     " is smaller than the kernel's span ", span,
                                                     " with valid padding"));
    }
    w.out = (in - span) / stride + 1;
    return w;
  }
  w.out = in / stride + (in % stride != 0 ? 1 : 0);
  // (out - 1) * stride + span - in, in an order that cannot overflow: the last window starts
  // `in - (out - 1) * stride` (in [1, stride], or stride when in is 0) before the input's end.
  const int64_t total = std::max<int64_t>(span - (in - (w.out - 1) * stride), 0);
  w.pad_before = total / 2;
  w.pad_after = total - w.pad_before;
  return w;
}

const char* PaddingName(Padding padding) { return padding == Padding::kSame ? "same" : "valid"; }

absl::StatusOr<Padding> ParsePadding(const std::string& name) {
  if (name == "valid") return Padding::kValid;
  if (name == "same") return Padding::kSame;
  return absl::InvalidArgumentError(
      absl::StrCat("padding must be \"valid\" or \"same\", not \"", name, "\""));
}

}  // namespace sluice::train::ops
