#include "ops/flip.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "ops/counter_rng.h"

namespace sluice {
namespace {

// Copies one row with its pixels (of `pixel` bytes) in reverse order.
template <size_t kPixel>
void ReverseRow(const char* src, char* dst, int64_t width, size_t pixel) {
  const size_t p = kPixel > 0 ? kPixel : pixel;
  for (int64_t x = 0; x < width; ++x) {
    std::memcpy(dst + static_cast<size_t>(width - 1 - x) * p, src + static_cast<size_t>(x) * p, p);
  }
}

}  // namespace

absl::StatusOr<Tensor> FlipLeftRight(const Tensor& image) {
  if (image.rank() != 3 || image.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("FlipLeftRight: expected a numeric [height, width, channels] image, got ",
                     DTypeName(image.dtype()), image.shape().DebugString()));
  }
  const int64_t h = image.dim(0), w = image.dim(1);
  const size_t pixel = static_cast<size_t>(image.dim(2)) * DTypeSize(image.dtype());
  const size_t stride = static_cast<size_t>(w) * pixel;
  Tensor out(image.dtype(), image.shape());
  const char* src = static_cast<const char*>(image.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t y = 0; y < h; ++y) {
    const char* s = src + static_cast<size_t>(y) * stride;
    char* d = dst + static_cast<size_t>(y) * stride;
    // Fixed-size memcpy compiles to plain loads and stores for the common pixel sizes.
    switch (pixel) {
      case 1:
        ReverseRow<1>(s, d, w, pixel);
        break;
      case 3:
        ReverseRow<3>(s, d, w, pixel);
        break;
      case 4:
        ReverseRow<4>(s, d, w, pixel);
        break;
      case 12:
        ReverseRow<12>(s, d, w, pixel);
        break;
      default:
        ReverseRow<0>(s, d, w, pixel);
    }
  }
  return out;
}

bool RandomFlipDecision(uint64_t seed) {
  return (CounterRng(seed, kRandomFlipStream).Next() >> 63) != 0;
}

absl::StatusOr<Tensor> RandomFlipLeftRight(const Tensor& image, uint64_t seed) {
  if (!RandomFlipDecision(seed)) {
    if (image.rank() != 3 || image.dtype() == DType::kBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RandomFlipLeftRight: expected a numeric [height, width, channels] image, got ",
          DTypeName(image.dtype()), image.shape().DebugString()));
    }
    return image;
  }
  return FlipLeftRight(image);
}

}  // namespace sluice
