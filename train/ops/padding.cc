#include "train/ops/padding.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace sluice::train::ops {

absl::StatusOr<Window> ComputeWindow(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                     Padding padding, int64_t pad_before, int64_t pad_after) {
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
  if (padding == Padding::kExplicit) {
    if (pad_before < 0 || pad_after < 0 || pad_before >= span || pad_after >= span) {
      return absl::InvalidArgumentError(absl::StrCat("window: padding ", pad_before, " and ",
                                                     pad_after, " must lie in [0, ", span,
                                                     "), the kernel's span"));
    }
    // Each pad is below span, itself far below INT64_MAX: the sum cannot overflow for any
    // `in` that is not within 2 spans of the limit.
    if (in > std::numeric_limits<int64_t>::max() - 2 * span) {
      return absl::InvalidArgumentError(absl::StrCat("window: input size ", in));
    }
    const int64_t padded = in + pad_before + pad_after;
    if (padded < span) {
      return absl::InvalidArgumentError(absl::StrCat("window: padded input size ", padded,
                                                     " is smaller than the kernel's span ", span));
    }
    w.out = (padded - span) / stride + 1;
    w.pad_before = pad_before;
    // What the last window reads of the end padding; the rest is never read.
    w.pad_after = std::max<int64_t>((w.out - 1) * stride + span - in - pad_before, 0);
    return w;
  }
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

const char* PaddingName(Padding padding) {
  switch (padding) {
    case Padding::kSame:
      return "same";
    case Padding::kExplicit:
      return "explicit";
    case Padding::kValid:
      break;
  }
  return "valid";
}

absl::StatusOr<Padding> ParsePadding(const std::string& name) {
  if (name == "valid") return Padding::kValid;
  if (name == "same") return Padding::kSame;
  if (name == "explicit") return Padding::kExplicit;
  return absl::InvalidArgumentError(
      absl::StrCat("padding must be \"valid\", \"same\" or \"explicit\", not \"", name, "\""));
}

}  // namespace sluice::train::ops
