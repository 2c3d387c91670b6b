#include "ops/encode_jpeg.h"

#include <turbojpeg.h>

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// A TurboJPEG compressor for one call. (Reusing one per thread would save an allocation, but
// TurboJPEG 2.1 writes wrong pixels with a compressor that has made a progressive JPEG before.)
class CompressorHandle {
 public:
  CompressorHandle() : handle_(tjInitCompress()) {}
  ~CompressorHandle() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  CompressorHandle(const CompressorHandle&) = delete;
  CompressorHandle& operator=(const CompressorHandle&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

// Frees a buffer TurboJPEG allocated.
struct TjBuffer {
  unsigned char* data = nullptr;
  ~TjBuffer() { tjFree(data); }
};

}  // namespace

absl::StatusOr<std::string> EncodeJpeg(const Tensor& image, const EncodeJpegOptions& options) {
  if (image.dtype() != DType::kUint8 || image.rank() != 3 ||
      (image.dim(2) != 1 && image.dim(2) != 3)) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncodeJpeg: expected a uint8 [height, width, 1 or 3] image, got ",
                     DTypeName(image.dtype()), image.shape().DebugString()));
  }
  // JPEG stores 16-bit dimensions; libjpeg allows up to 65500.
  constexpr int64_t kMaxDimension = 65500;
  const int64_t h = image.dim(0), w = image.dim(1);
  if (h <= 0 || w <= 0 || h > kMaxDimension || w > kMaxDimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncodeJpeg: a ", h, "x", w,
                     " image cannot be a JPEG (each side must be 1 to ", kMaxDimension, ")"));
  }
  if (options.quality < 1 || options.quality > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncodeJpeg: quality must be 1..100, got ", options.quality));
  }
  const bool gray = image.dim(2) == 1;
  int subsampling = TJSAMP_GRAY;
  if (!gray) {
    switch (options.subsampling) {
      case ChromaSubsampling::k420:
        subsampling = TJSAMP_420;
        break;
      case ChromaSubsampling::k422:
        subsampling = TJSAMP_422;
        break;
      case ChromaSubsampling::k444:
        subsampling = TJSAMP_444;
        break;
    }
  }
  CompressorHandle compressor;
  if (compressor.get() == nullptr) {
    return absl::InternalError("EncodeJpeg: tjInitCompress failed");
  }
  TjBuffer out;
  unsigned long size = 0;
  const int flags = TJFLAG_ACCURATEDCT | (options.progressive ? TJFLAG_PROGRESSIVE : 0);
  if (tjCompress2(compressor.get(), image.data<uint8_t>(), static_cast<int>(w), 0,
                  static_cast<int>(h), gray ? TJPF_GRAY : TJPF_RGB, &out.data, &size, subsampling,
                  options.quality, flags) != 0) {
    return absl::InternalError(absl::StrCat("EncodeJpeg: TurboJPEG failed on a ", h, "x", w,
                                            " image: ", tjGetErrorStr2(compressor.get())));
  }
  return std::string(reinterpret_cast<const char*>(out.data), size);
}

}  // namespace sluice
