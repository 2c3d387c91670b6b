#ifndef SLUICE_OPS_ENCODE_JPEG_H_
#define SLUICE_OPS_ENCODE_JPEG_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// How an RGB image's chroma is stored (grayscale images have none).
enum class ChromaSubsampling {
  k420,  // Half resolution both ways: the usual choice for photos (and TensorFlow's default).
  k422,  // Half resolution horizontally.
  k444,  // Full resolution: larger files, sharper colour edges.
};

struct EncodeJpegOptions {
  int quality = 95;  // 1..100
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  bool progressive = false;
};

// Encodes a uint8 [height, width, channels] image (HWC; 3 = RGB, 1 = grayscale) as a baseline (or
// progressive) JFIF JPEG with TurboJPEG, using the accurate integer DCT. Returns the file's bytes.
absl::StatusOr<std::string> EncodeJpeg(const Tensor& image, const EncodeJpegOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_OPS_ENCODE_JPEG_H_
