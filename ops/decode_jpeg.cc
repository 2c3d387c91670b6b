#include "ops/decode_jpeg.h"

// clang-format off: jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
// clang-format on

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/jpeg_error_manager.h"
#include "ops/jpeg_restart.h"

namespace sluice {
namespace {

enum class Colour { kGray, kRgb, kCmyk };

struct DecodeState {
  JpegErrorManager err;
  jpeg_decompress_struct cinfo;
  const unsigned char* data;
  size_t size;

  // Set before the configure phase.
  J_COLOR_SPACE out_color_space;
  unsigned int scale_denom;
  J_DCT_METHOD dct_method;

  // Set before the decompress phase. Output rows [y, y + height) and columns [x, x + width) of
  // the (scaled) image; decode_x/decode_width widen the columns for upsampling context.
  JDIMENSION y, x, height, width;
  JDIMENSION out_width;  // of a row of `out`: width, or decode_width when it keeps every column
  bool crop_columns;
  JDIMENSION decode_x, decode_width;
  Colour colour;       // What libjpeg produces.
  int out_channels;    // What we write (differs from libjpeg's only for CMYK).
  unsigned char* out;  // height * width * out_channels bytes.
  unsigned char* row;  // Scratch row (output_width * 4 bytes) unless rows go straight to `out`.
  const char* failed_step;
};

// Adobe Photoshop writes CMYK JPEGs inverted (0 = full ink); others do not. The conversion is
// TensorFlow's: naive, without an ICC profile.
void CmykToRgb(const unsigned char* cmyk, JDIMENSION n, bool inverted, int out_channels,
               unsigned char* out) {
  for (JDIMENSION i = 0; i < n; ++i, cmyk += 4) {
    int c = cmyk[0], m = cmyk[1], ye = cmyk[2], k = cmyk[3];
    if (!inverted) {
      c = 255 - c;
      m = 255 - m;
      ye = 255 - ye;
      k = 255 - k;
    }
    const int r = c * k / 255, g = m * k / 255, b = ye * k / 255;
    if (out_channels == 3) {
      out[0] = static_cast<unsigned char>(r);
      out[1] = static_cast<unsigned char>(g);
      out[2] = static_cast<unsigned char>(b);
      out += 3;
    } else {  // libjpeg's rgb_gray weights (ITU-R BT.601), in 16-bit fixed point.
      *out++ = static_cast<unsigned char>((r * 19595 + g * 38470 + b * 7471 + 32768) >> 16);
    }
  }
}

// Phase 1: create the decompressor and read the header. Returns false on a libjpeg error.
bool ReadHeaderPhase(DecodeState* s) {
  if (setjmp(s->err.jump)) return false;
  s->failed_step = "reading the header";
  jpeg_create_decompress(&s->cinfo);
  jpeg_mem_src(&s->cinfo, s->data, static_cast<unsigned long>(s->size));
  jpeg_read_header(&s->cinfo, TRUE);
  return true;
}

// Phase 2: apply the output parameters and compute the output size.
bool ConfigurePhase(DecodeState* s) {
  if (setjmp(s->err.jump)) return false;
  s->failed_step = "setting up decompression";
  s->cinfo.out_color_space = s->out_color_space;
  s->cinfo.scale_num = 1;
  s->cinfo.scale_denom = s->scale_denom;
  s->cinfo.dct_method = s->dct_method;
  jpeg_calc_output_dimensions(&s->cinfo);
  return true;
}

// Copies the requested columns of one decoded row to the output.
void EmitRow(DecodeState* s, const unsigned char* decoded, unsigned char* out) {
  const JDIMENSION skip = s->x - s->decode_x;
  if (s->colour == Colour::kCmyk) {
    CmykToRgb(decoded + static_cast<size_t>(skip) * 4, s->width, s->cinfo.saw_Adobe_marker,
              s->out_channels, out);
  } else {
    std::memcpy(out, decoded + static_cast<size_t>(skip) * s->out_channels,
                static_cast<size_t>(s->width) * s->out_channels);
  }
}

// Phase 3: start decompressing; with crop_columns, decode_x and decode_width become the columns
// libjpeg-turbo will decode (widened to iMCU boundaries).
bool StartPhase(DecodeState* s) {
  if (setjmp(s->err.jump)) return false;
  j_decompress_ptr cinfo = &s->cinfo;
  s->failed_step = "starting decompression";
  jpeg_start_decompress(cinfo);
  s->failed_step = "decoding";
  if (s->crop_columns) {
    JDIMENSION xoffset = s->decode_x, width = s->decode_width;
    jpeg_crop_scanline(cinfo, &xoffset, &width);  // Widens to iMCU boundaries.
    s->decode_x = xoffset;
    s->decode_width = width;
  }
  return true;
}

// Phase 4: decode rows [y, y + height) into s->out, out_width pixels a row.
bool ReadPhase(DecodeState* s) {
  if (setjmp(s->err.jump)) return false;
  j_decompress_ptr cinfo = &s->cinfo;
  if (s->y > 0 && jpeg_skip_scanlines(cinfo, s->y) != s->y) {
    s->failed_step = "skipping rows";
    ERREXIT(cinfo, JERR_TOO_LITTLE_DATA);
  }
  const size_t out_stride = static_cast<size_t>(s->out_width) * s->out_channels;
  const bool direct = s->row == nullptr;
  JDIMENSION done = 0;
  while (done < s->height) {
    enum { kMaxRows = 16 };
    JSAMPROW rows[kMaxRows];
    JDIMENSION want = 1;
    if (direct) {
      want = std::min<JDIMENSION>(s->height - done, kMaxRows);
      for (JDIMENSION i = 0; i < want; ++i) rows[i] = s->out + (done + i) * out_stride;
    } else {
      rows[0] = s->row;
    }
    const JDIMENSION got = jpeg_read_scanlines(cinfo, rows, want);
    if (got == 0) ERREXIT(cinfo, JERR_TOO_LITTLE_DATA);  // Cannot happen with a memory source.
    if (!direct) EmitRow(s, s->row, s->out + done * out_stride);
    done += got;
  }
  // The rows below the window are never decoded: the caller destroys the decompressor, which
  // aborts it, instead of finishing it.
  return true;
}

// Owns the libjpeg state for one call; the destructor releases libjpeg's memory.
class Decompressor {
 public:
  // `op` names the caller in error messages.
  Decompressor(absl::string_view jpeg, const char* op) : op_(op) {
    std::memset(&s_, 0, sizeof(s_));
    s_.cinfo.err = InitJpegErrorManager(&s_.err);
    s_.data = reinterpret_cast<const unsigned char*>(jpeg.data());
    s_.size = jpeg.size();
  }
  ~Decompressor() { jpeg_destroy_decompress(&s_.cinfo); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  const char* op() const { return op_; }
  DecodeState& state() { return s_; }
  jpeg_decompress_struct& cinfo() { return s_.cinfo; }

  // The status for a phase that returned false.
  absl::Status Failure(absl::StatusCode header_code) const {
    // After the end of the data the source manager points into its own fake EOI buffer.
    size_t offset = s_.size;
    if (s_.cinfo.src != nullptr && s_.cinfo.src->next_input_byte >= s_.data &&
        s_.cinfo.src->next_input_byte <= s_.data + s_.size) {
      offset = static_cast<size_t>(s_.cinfo.src->next_input_byte - s_.data);
    }
    if (s_.err.truncated) {
      return absl::DataLossError(absl::StrCat(op_, ": truncated JPEG: the ", s_.size,
                                              "-byte buffer ends while ", s_.failed_step, " (",
                                              s_.err.message, ")"));
    }
    return absl::Status(
        header_code,
        absl::StrCat(op_, ": ",
                     header_code == absl::StatusCode::kDataLoss ? "corrupt JPEG" : "invalid JPEG",
                     " (", s_.size, " bytes) while ", s_.failed_step, ", near byte offset ", offset,
                     ": ", s_.err.message));
  }

 private:
  const char* op_;
  DecodeState s_;
};

// Reads and checks the header; on success the decompressor is ready for ConfigurePhase.
absl::Status ReadHeader(absl::string_view jpeg, int64_t max_pixels, Decompressor& d) {
  if (jpeg.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(d.op(), ": empty buffer, not a JPEG"));
  }
  if (jpeg.size() < 2 || static_cast<unsigned char>(jpeg[0]) != 0xFF ||
      static_cast<unsigned char>(jpeg[1]) != 0xD8) {
    return absl::InvalidArgumentError(
        absl::StrCat(d.op(), ": not a JPEG (", jpeg.size(),
                     " bytes, expected the SOI marker FF D8 at byte offset 0)"));
  }
  if (!ReadHeaderPhase(&d.state())) return d.Failure(absl::StatusCode::kInvalidArgument);
  const jpeg_decompress_struct& c = d.cinfo();
  const int64_t pixels = static_cast<int64_t>(c.image_width) * c.image_height;
  if (c.image_width == 0 || c.image_height == 0 || pixels > max_pixels) {
    return absl::InvalidArgumentError(absl::StrCat(
        d.op(), ": the header declares ", c.image_width, "x", c.image_height,
        " pixels, over the limit of ", max_pixels, " (DecodeJpegOptions::max_pixels)"));
  }
  switch (c.jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
    case JCS_CMYK:
    case JCS_YCCK:
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(d.op(), ": unsupported JPEG colour space with ", c.num_components,
                       " components (expected grayscale, YCbCr, RGB, CMYK or YCCK)"));
  }
}

// Fancy upsampling of subsampled chroma reads one chroma sample on each side; at the edge of a
// cropped region libjpeg replicates the edge sample instead. Decoding a few more pixels on each
// side of a window keeps those edges outside it, so the result equals a full decode.
constexpr int64_t kContext = 4;

bool IsCmyk(const jpeg_decompress_struct& c) {
  return c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK;
}

}  // namespace

absl::StatusOr<JpegHeader> ReadJpegHeader(absl::string_view jpeg) {
  Decompressor d(jpeg, "ReadJpegHeader");
  // The pixel limit protects decoding; a header alone is always safe to report.
  if (absl::Status s = ReadHeader(jpeg, INT64_MAX, d); !s.ok()) return s;
  const jpeg_decompress_struct& c = d.cinfo();
  return JpegHeader{.height = c.image_height,
                    .width = c.image_width,
                    .channels = c.jpeg_color_space == JCS_GRAYSCALE ? 1 : 3};
}

namespace {

absl::Status CheckOptions(const DecodeJpegOptions& options) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodeJpeg: channels must be 0, 1 or 3, got ", options.channels));
  }
  const int denom = options.scale_denom;
  if (denom != 1 && denom != 2 && denom != 4 && denom != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodeJpeg: scale_denom must be 1, 2, 4 or 8, got ", denom));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Decode(absl::string_view jpeg, const DecodeJpegOptions& options,
                              int64_t* window_x);

// The crop decoded from the restart segments that cover it (ops/jpeg_restart.h), or nullopt
// where the JPEG has none, or they fail to decode: the caller then decodes the whole image, whose
// errors name the byte offset in the caller's data.
std::optional<Tensor> DecodeFromRestartSegments(absl::string_view jpeg,
                                                const DecodeJpegOptions& options,
                                                int64_t* window_x) {
  const int denom = options.scale_denom;
  std::optional<JpegRegion> region = ExtractJpegRegion(jpeg, *options.crop, denom, kContext);
  if (!region.has_value() || region->full_height * region->full_width > options.max_pixels) {
    return std::nullopt;
  }
  DecodeJpegOptions inner = options;
  inner.use_restart_markers = false;
  inner.crop->y -= region->y / denom;
  inner.crop->x -= region->x / denom;
  absl::StatusOr<Tensor> image = Decode(region->jpeg, inner, window_x);
  if (!image.ok()) return std::nullopt;
  return *std::move(image);
}

// Sets what libjpeg produces and what we write, for `channels` (0: as the JPEG has); returns the
// channels written.
int SetOutputColour(const jpeg_decompress_struct& c, int channels, DecodeState& s) {
  const int out_channels = channels != 0 ? channels : (c.jpeg_color_space == JCS_GRAYSCALE ? 1 : 3);
  if (IsCmyk(c)) {
    // libjpeg cannot convert CMYK to RGB: take CMYK and convert it ourselves.
    s.colour = Colour::kCmyk;
    s.out_color_space = JCS_CMYK;
  } else if (out_channels == 1) {
    s.colour = Colour::kGray;
    s.out_color_space = JCS_GRAYSCALE;
  } else {
    s.colour = Colour::kRgb;
    s.out_color_space = JCS_EXT_RGB;  // As TurboJPEG's TJPF_RGB.
  }
  s.out_channels = out_channels;
  return out_channels;
}

// The window to decode of the (scaled) full_h x full_w image: options.crop, checked, or all of it.
absl::StatusOr<CropWindow> DecodeWindow(const DecodeJpegOptions& options, int64_t full_h,
                                        int64_t full_w) {
  CropWindow window{.y = 0, .x = 0, .height = full_h, .width = full_w};
  if (!options.crop.has_value()) return window;
  window = *options.crop;
  if (window.height <= 0 || window.width <= 0 || window.y < 0 || window.x < 0 ||
      window.y > full_h - window.height || window.x > full_w - window.width) {
    const int denom = options.scale_denom;
    return absl::InvalidArgumentError(absl::StrCat(
        "DecodeJpeg: crop window ", window.DebugString(), " is empty or not inside the ", full_h,
        "x", full_w, " image", denom > 1 ? absl::StrCat(" (scaled 1/", denom, ")") : ""));
  }
  return window;
}

// Sets the rows and columns libjpeg decodes for `window`: whole rows of a full_w-wide image, or,
// when columns are cut, the window's with kContext columns beside it.
void SetWindow(const CropWindow& window, int64_t full_w, DecodeState& s) {
  s.y = static_cast<JDIMENSION>(window.y);
  s.x = static_cast<JDIMENSION>(window.x);
  s.height = static_cast<JDIMENSION>(window.height);
  s.width = static_cast<JDIMENSION>(window.width);
  s.crop_columns = window.width < full_w;
  s.decode_x = 0;
  s.decode_width = static_cast<JDIMENSION>(full_w);
  if (s.crop_columns) {
    const int64_t begin = std::max<int64_t>(0, window.x - kContext);
    const int64_t end = std::min(full_w, window.x + window.width + kContext);
    s.decode_x = static_cast<JDIMENSION>(begin);
    s.decode_width = static_cast<JDIMENSION>(end - begin);
  }
}

// A uint8 tensor of `shape`, from `pool` when there is one.
absl::StatusOr<Tensor> AllocateImage(Shape shape, BufferPool* pool) {
  if (pool == nullptr) return Tensor(DType::kUint8, std::move(shape));
  return Tensor::FromBuffer(DType::kUint8, shape,
                            pool->Get(static_cast<size_t>(shape.num_elements())));
}

// DecodeJpeg, or DecodeJpegCovering when window_x is not null.
absl::StatusOr<Tensor> Decode(absl::string_view jpeg, const DecodeJpegOptions& options,
                              int64_t* window_x) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (options.crop.has_value() && options.use_restart_markers) {
    if (std::optional<Tensor> image = DecodeFromRestartSegments(jpeg, options, window_x)) {
      return *std::move(image);
    }
  }
  Decompressor d(jpeg, "DecodeJpeg");
  if (absl::Status s = ReadHeader(jpeg, options.max_pixels, d); !s.ok()) return s;
  DecodeState& s = d.state();
  const jpeg_decompress_struct& c = d.cinfo();
  const int out_channels = SetOutputColour(c, options.channels, s);
  s.scale_denom = static_cast<unsigned int>(options.scale_denom);
  s.dct_method = options.fast_dct ? JDCT_IFAST : JDCT_ISLOW;
  if (!ConfigurePhase(&s)) return d.Failure(absl::StatusCode::kInvalidArgument);

  const int64_t full_h = c.output_height, full_w = c.output_width;
  absl::StatusOr<CropWindow> window = DecodeWindow(options, full_h, full_w);
  if (!window.ok()) return window.status();
  SetWindow(*window, full_w, s);
  if (!StartPhase(&s)) return d.Failure(absl::StatusCode::kDataLoss);
  // Covering: rows go straight into the tensor with every column libjpeg decodes.
  const bool covering = window_x != nullptr && s.crop_columns && s.colour != Colour::kCmyk;
  s.out_width = covering ? s.decode_width : s.width;
  if (window_x != nullptr) *window_x = covering ? window->x - s.decode_x : 0;
  absl::StatusOr<Tensor> image =
      AllocateImage(Shape{window->height, s.out_width, out_channels}, options.pool);
  if (!image.ok()) return image.status();
  s.out = image->data<uint8_t>();
  // Rows go straight into the tensor unless columns are cut or CMYK needs converting.
  std::vector<unsigned char> row;
  if (!covering && (s.crop_columns || s.colour == Colour::kCmyk)) {
    row.resize(static_cast<size_t>(full_w) * 4);
    s.row = row.data();
  }
  if (!ReadPhase(&s)) return d.Failure(absl::StatusCode::kDataLoss);
  return image;
}

}  // namespace

absl::StatusOr<Tensor> DecodeJpeg(absl::string_view jpeg, const DecodeJpegOptions& options) {
  return Decode(jpeg, options, nullptr);
}

absl::StatusOr<Tensor> DecodeJpegCovering(absl::string_view jpeg, const DecodeJpegOptions& options,
                                          int64_t* window_x) {
  return Decode(jpeg, options, window_x);
}

int ChooseScaleDenom(int64_t window_h, int64_t window_w, int64_t out_h, int64_t out_w) {
  for (int denom : {8, 4, 2}) {
    if (window_h >= out_h * denom && window_w >= out_w * denom) return denom;
  }
  return 1;
}

}  // namespace sluice
