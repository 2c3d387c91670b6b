#ifndef SLUICE_OPS_DECODE_JPEG_H_
#define SLUICE_OPS_DECODE_JPEG_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/buffer_pool.h"
#include "core/tensor.h"
#include "ops/crop.h"

namespace sluice {

// What a JPEG's header says, without decoding any pixel.
struct JpegHeader {
  int64_t height = 0;
  int64_t width = 0;
  // Channels DecodeJpeg produces with channels = 0: 1 for a grayscale JPEG, 3 otherwise (CMYK and
  // YCCK JPEGs decode to RGB).
  int channels = 0;
};

struct DecodeJpegOptions {
  // 0: as encoded (1 for grayscale, 3 otherwise), 1: grayscale (the luma of a colour JPEG), 3: RGB.
  int channels = 0;
  // Decode only this window, in the coordinates of the (scaled) output image: the result equals
  // decoding the whole image and cropping it. (Except for corrupt data libjpeg recovers from: the
  // inter-block smoothing of an incomplete progressive JPEG can differ by a few levels.) Rows above
  // the window are skipped without colour conversion or upsampling, rows below are never decoded,
  // and only the iMCU columns that cover the window (plus a few pixels of upsampling context) are
  // inverse-transformed.
  std::optional<CropWindow> crop;
  // 1, 2, 4 or 8: decode at 1/scale_denom of the size by scaling in the DCT domain (much less work
  // than decoding at full size and resizing). The scaled image is ceil(height / scale_denom) x
  // ceil(width / scale_denom), exactly as libjpeg-turbo's own scaled decoding.
  int scale_denom = 1;
  // A header declaring more pixels (height * width, before cropping or scaling: libjpeg buffers
  // whole rows, and a progressive JPEG's whole coefficient image) is InvalidArgument, before any
  // large allocation.
  int64_t max_pixels = int64_t{1} << 28;
  // Use the faster, slightly less accurate integer IDCT (JDCT_IFAST) instead of JDCT_ISLOW.
  bool fast_dct = false;
  // Memory for the result from this pool (not owned; made by BufferPool::Create) instead of a
  // new allocation: decoded photos are large blocks that malloc would otherwise return to the
  // kernel and fault in again, page by page, for the next image.
  BufferPool* pool = nullptr;
  // With a crop window and a JPEG that has restart markers (DRI; `sluice convert images
  // --restart-interval` adds them losslessly), copy out the restart segments that cover the window
  // into a JPEG of their own and decode that (ops/jpeg_restart.h): the rows above and the columns
  // beside the window are then not even entropy-decoded. The pixels are the same.
  bool use_restart_markers = true;
};

// Reads the header of a JPEG. Errors as DecodeJpeg's.
absl::StatusOr<JpegHeader> ReadJpegHeader(absl::string_view jpeg);

// Decodes a JPEG to a uint8 [height, width, channels] tensor (HWC, RGB or grayscale).
//
// Errors (never a crash): an empty buffer, data that is not a JPEG, or an invalid or unsupported
// header (including dimensions over max_pixels) and invalid options are InvalidArgument; data that
// ends before the pixels we need ("truncated JPEG") or that libjpeg cannot decode is DataLoss.
// Corrupt-data warnings that libjpeg recovers from (extraneous bytes before a marker, a bad Huffman
// code) are tolerated, as TensorFlow and PIL tolerate them. A JPEG cut short below a crop window
// of a sequential JPEG decodes without error: the missing bytes are never read. One missing only
// its EOI marker is DataLoss, as in TensorFlow without try_recover_truncated: libjpeg's Huffman
// reader reads ahead past the last scan's data (DecodeJpegTest.MissingOnlyTheEoiMarkerIsDataLoss).
absl::StatusOr<Tensor> DecodeJpeg(absl::string_view jpeg, const DecodeJpegOptions& options = {});

// DecodeJpeg for a caller that reads a window of the result (DecodeAndRandomResizedCrop): with a
// crop window, the result has the window's rows but may keep columns on either side of it, those
// libjpeg-turbo decodes anyway (the window's iMCU columns), which saves copying the window out of
// every row. The window's pixels equal DecodeJpeg's; it starts at column *window_x of the result
// (0 when no column is kept beside it).
absl::StatusOr<Tensor> DecodeJpegCovering(absl::string_view jpeg, const DecodeJpegOptions& options,
                                          int64_t* window_x);

// Size of one dimension decoded at 1/scale_denom: ceil(size / scale_denom).
inline int64_t JpegScaledSize(int64_t size, int scale_denom) {
  return (size + scale_denom - 1) / scale_denom;
}

// The largest DCT scale denominator among 1, 2, 4 and 8 such that the window, scaled, still covers
// the output size in both dimensions (window_h >= out_h * denom and window_w >= out_w * denom),
// so that the resize after decoding never upsamples because of the scaling. 1 when even the
// unscaled window is smaller than the output.
int ChooseScaleDenom(int64_t window_h, int64_t window_w, int64_t out_h, int64_t out_w);

}  // namespace sluice

#endif  // SLUICE_OPS_DECODE_JPEG_H_
