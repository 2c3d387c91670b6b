#include "ops/jpeg_restart.h"

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "ops/jpeg_error_manager.h"

namespace sluice {
namespace {

// ------------------------------------------------------------------ lossless re-encoding

// All of libjpeg's state for one transcode; C-style so that the longjmp skips no destructor
// (jpeg_error_manager.h).
struct TranscodeState {
  JpegErrorManager err;
  jpeg_decompress_struct src;
  jpeg_compress_struct dst;
  bool src_created, dst_created;
  unsigned char* out;
  unsigned long out_size;
  const char* step;
  bool unsupported;  // not grayscale or YCbCr
};

bool IsMarkerWrittenByLibjpeg(const jpeg_saved_marker_ptr m) {
  if (m->marker == JPEG_APP0 && m->data_length >= 5 && std::memcmp(m->data, "JFIF\0", 5) == 0) {
    return true;
  }
  return m->marker == JPEG_APP0 + 14 && m->data_length >= 5 &&
         std::memcmp(m->data, "Adobe", 5) == 0;
}

// Returns false on a libjpeg error (s->err.message says which).
bool Transcode(TranscodeState* s, const unsigned char* data, size_t size, int interval) {
  if (setjmp(s->err.jump)) return false;
  s->step = "reading the header";
  jpeg_create_decompress(&s->src);
  s->src_created = true;
  jpeg_mem_src(&s->src, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&s->src, JPEG_COM, 0xFFFF);
  for (int m = 0; m < 16; ++m) jpeg_save_markers(&s->src, JPEG_APP0 + m, 0xFFFF);
  jpeg_read_header(&s->src, TRUE);
  if (s->src.jpeg_color_space != JCS_GRAYSCALE && s->src.jpeg_color_space != JCS_YCbCr) {
    s->unsupported = true;
    return false;
  }
  s->step = "reading the coefficients";
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&s->src);
  s->step = "writing";
  s->dst.err = &s->err.pub;
  jpeg_create_compress(&s->dst);
  s->dst_created = true;
  jpeg_mem_dest(&s->dst, &s->out, &s->out_size);
  jpeg_copy_critical_parameters(&s->src, &s->dst);
  s->dst.optimize_coding = TRUE;
  s->dst.restart_interval = static_cast<unsigned int>(interval);
  jpeg_write_coefficients(&s->dst, coefficients);
  for (jpeg_saved_marker_ptr m = s->src.marker_list; m != nullptr; m = m->next) {
    if (!IsMarkerWrittenByLibjpeg(m))
      jpeg_write_marker(&s->dst, m->marker, m->data, m->data_length);
  }
  jpeg_finish_compress(&s->dst);
  jpeg_finish_decompress(&s->src);
  return true;
}

// ------------------------------------------------------------------ region extraction

constexpr size_t kHuffmanLookahead = 512 * 10;

uint16_t ReadU16(const unsigned char* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
void WriteU16(unsigned char* p, int64_t v) {
  p[0] = static_cast<unsigned char>(v >> 8);
  p[1] = static_cast<unsigned char>(v & 0xFF);
}

// What ExtractJpegRegion needs from the markers before the entropy-coded data.
struct SequentialLayout {
  size_t sof_payload = 0;  // offset of the SOF's payload (precision byte)
  size_t scan_begin = 0;   // first byte of entropy-coded data
  int64_t height = 0, width = 0;
  int64_t mcu_h = 0, mcu_w = 0;  // pixels
  int64_t interval = 0;          // MCUs per restart segment
};

// Parses the markers of a single-scan Huffman sequential JPEG with restart markers; nullopt for
// anything else (or anything malformed: the caller's decoder reports it).
std::optional<SequentialLayout> ParseLayout(const unsigned char* d, size_t n) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return std::nullopt;
  SequentialLayout l;
  int components = 0, max_h = 1, max_v = 1;
  bool have_sof = false;
  size_t p = 2;
  while (true) {
    if (p >= n || d[p] != 0xFF) return std::nullopt;
    while (p < n && d[p] == 0xFF) ++p;  // Fill bytes.
    if (p >= n) return std::nullopt;
    const unsigned char marker = d[p++];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // No payload.
    if (marker == 0xD8 || marker == 0xD9 || p + 2 > n) return std::nullopt;
    const size_t length = ReadU16(d + p);
    if (length < 2 || p + length > n) return std::nullopt;
    const unsigned char* payload = d + p + 2;
    const size_t payload_size = length - 2;
    switch (marker) {
      case 0xC0:  // Baseline.
      case 0xC1:  // Extended sequential, Huffman.
        if (have_sof || payload_size < 6) return std::nullopt;
        have_sof = true;
        l.sof_payload = p + 2;
        l.height = ReadU16(payload + 1);
        l.width = ReadU16(payload + 3);
        components = payload[5];
        if (payload[0] != 8 || l.height == 0 || l.width == 0 || components < 1 || components > 4 ||
            payload_size < 6 + 3 * static_cast<size_t>(components)) {
          return std::nullopt;
        }
        for (int c = 0; c < components; ++c) {
          const int h = payload[6 + 3 * c + 1] >> 4, v = payload[6 + 3 * c + 1] & 15;
          if (h < 1 || h > 4 || v < 1 || v > 4) return std::nullopt;
          max_h = std::max(max_h, h);
          max_v = std::max(max_v, v);
        }
        break;
      case 0xDD:  // DRI
        if (payload_size < 2) return std::nullopt;
        l.interval = ReadU16(payload);
        break;
      case 0xDA: {  // SOS: the one scan must hold every component.
        if (!have_sof || payload_size < 1 || payload[0] != components || l.interval == 0) {
          return std::nullopt;
        }
        const size_t ns = payload[0];
        if (payload_size < 1 + 2 * ns + 3) return std::nullopt;
        const unsigned char* tail = payload + 1 + 2 * ns;
        if (tail[0] != 0 || tail[1] != 63 || tail[2] != 0) return std::nullopt;
        l.scan_begin = p + length;
        // A single-component scan is non-interleaved: its MCU is one 8x8 block.
        l.mcu_h = components == 1 ? 8 : 8 * max_v;
        l.mcu_w = components == 1 ? 8 : 8 * max_h;
        return l;
      }
      default:
        if ((marker >= 0xC2 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
             marker != 0xCC) ||
            marker == 0xDC) {  // Progressive, lossless, arithmetic; DNL.
          return std::nullopt;
        }
        break;
    }
    p += length;
  }
}

// Finds the restart segments of the entropy-coded data from `begin`, up to and including segment
// `last`: segment s is [bounds[s].first, bounds[s].second). False if the data ends, or a marker
// other than the next restart marker comes, before that.
bool FindSegments(const unsigned char* d, size_t n, size_t begin, int64_t last,
                  std::vector<std::pair<size_t, size_t>>* bounds) {
  bounds->clear();
  size_t start = begin, p = begin;
  while (static_cast<int64_t>(bounds->size()) <= last) {
    const void* ff = p < n ? std::memchr(d + p, 0xFF, n - p) : nullptr;
    if (ff == nullptr) return false;
    const size_t at = static_cast<size_t>(static_cast<const unsigned char*>(ff) - d);
    size_t q = at + 1;
    while (q < n && d[q] == 0xFF) ++q;
    if (q >= n) return false;
    const unsigned char m = d[q];
    if (m == 0x00) {  // A stuffed 0xFF data byte.
      p = q + 1;
      continue;
    }
    const int64_t s = static_cast<int64_t>(bounds->size());
    bounds->emplace_back(start, at);
    if (m >= 0xD0 && m <= 0xD7) {
      if (m != 0xD0 + s % 8) return false;  // Out of sequence: leave it to libjpeg's resync.
      start = p = q + 1;
    } else if (s < last) {
      return false;  // The scan ended (EOI or another marker) before the segments we need.
    } else {
      return true;
    }
  }
  return true;
}

// The restart segments that cover a window: MCU rows [r0, r1) and segment columns [c0, c1), with
// `columns` segments per MCU row, or one segment per `rows_per_segment` MCU rows (a band).
struct SegmentRange {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 1;
  int64_t columns = 1, rows_per_segment = 1, segment_mcus_w = 0;
  int64_t mcu_rows = 0;

  // Segment of MCU row r, column c (for bands: of the band holding row r).
  int64_t Segment(int64_t r, int64_t c) const { return r / rows_per_segment * columns + c; }
  bool WholeImage() const { return r0 == 0 && r1 == mcu_rows && c0 == 0 && c1 == columns; }
};

// The segments covering `window` (in pixels of the image scaled by 1/k) and `margin` scaled
// pixels around it; nullopt where the window is not inside the image, 1/k does not scale an MCU
// to whole pixels, or the segments do not line up with MCU rows.
std::optional<SegmentRange> CoveringSegments(const SequentialLayout& l, const CropWindow& window,
                                             int64_t k, int64_t margin) {
  if (k < 1 || k > 8 || l.mcu_h % k != 0 || l.mcu_w % k != 0 || window.height <= 0 ||
      window.width <= 0 || window.y < 0 || window.x < 0 ||
      window.y + window.height > (l.height + k - 1) / k ||
      window.x + window.width > (l.width + k - 1) / k) {
    return std::nullopt;
  }
  const int64_t mcus_per_row = (l.width + l.mcu_w - 1) / l.mcu_w;
  SegmentRange g;
  g.mcu_rows = (l.height + l.mcu_h - 1) / l.mcu_h;
  g.segment_mcus_w = mcus_per_row;
  // The window and its margin in pixels of the full image (scaled pixel i covers [i k, (i + 1) k)).
  const int64_t y0 = std::max<int64_t>(0, (window.y - margin) * k);
  const int64_t y1 = std::min(l.height, (window.y + window.height + margin) * k);
  const int64_t x0 = std::max<int64_t>(0, (window.x - margin) * k);
  const int64_t x1 = std::min(l.width, (window.x + window.width + margin) * k);
  g.r0 = y0 / l.mcu_h;
  g.r1 = (y1 + l.mcu_h - 1) / l.mcu_h;
  if (mcus_per_row % l.interval == 0) {
    g.columns = mcus_per_row / l.interval;
    g.segment_mcus_w = l.interval;
    g.c0 = (x0 / l.mcu_w) / l.interval;
    g.c1 = ((x1 + l.mcu_w - 1) / l.mcu_w + l.interval - 1) / l.interval;
  } else if (l.interval % mcus_per_row == 0) {
    g.rows_per_segment = l.interval / mcus_per_row;
    g.r0 = g.r0 / g.rows_per_segment * g.rows_per_segment;
    g.r1 = std::min(g.mcu_rows,
                    (g.r1 + g.rows_per_segment - 1) / g.rows_per_segment * g.rows_per_segment);
  } else {
    return std::nullopt;
  }
  return g;
}

// The JPEG of the segments `g` of `d`: its markers up to the scan, with the frame's size made the
// region's, then the segments (`bounds`, as FindSegments found them) renumbered from RST0, and an
// EOI.
JpegRegion CopySegments(const unsigned char* d, const SequentialLayout& l, const SegmentRange& g,
                        const std::vector<std::pair<size_t, size_t>>& bounds) {
  JpegRegion region;
  region.full_height = l.height;
  region.full_width = l.width;
  region.y = g.r0 * l.mcu_h;
  region.x = g.c0 * g.segment_mcus_w * l.mcu_w;
  const int64_t height = std::min(l.height, g.r1 * l.mcu_h) - region.y;
  const int64_t width = std::min(l.width, g.c1 * g.segment_mcus_w * l.mcu_w) - region.x;
  std::string& out = region.jpeg;
  size_t bytes = l.scan_begin + 2 + kHuffmanLookahead;
  for (int64_t r = g.r0; r < g.r1; r += g.rows_per_segment) {
    for (int64_t c = g.c0; c < g.c1; ++c) {
      const auto& [begin, end] = bounds[g.Segment(r, c)];
      bytes += end - begin + 2;
    }
  }
  out.resize(bytes);
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(o, d, l.scan_begin);
  WriteU16(o + l.sof_payload + 1, height);
  WriteU16(o + l.sof_payload + 3, width);
  size_t at = l.scan_begin;
  int64_t written = 0;
  for (int64_t r = g.r0; r < g.r1; r += g.rows_per_segment) {
    for (int64_t c = g.c0; c < g.c1; ++c) {
      if (written > 0) {  // Renumbered: a decoder expects RST0, RST1, ... from the scan's start.
        o[at++] = 0xFF;
        o[at++] = static_cast<unsigned char>(0xD0 + (written - 1) % 8);
      }
      const auto& [begin, end] = bounds[g.Segment(r, c)];
      std::memcpy(o + at, d + begin, end - begin);
      at += end - begin;
      ++written;
    }
  }
  o[at++] = 0xFF;
  o[at++] = 0xD9;
  // libjpeg-turbo's fast Huffman decoder runs only while at least 512 bytes per block of an MCU
  // (at most 10 blocks) remain in the buffer; a region is often smaller than that. Bytes after
  // the EOI are never read, but they keep the decoder on its fast path to the end.
  out.resize(at + kHuffmanLookahead, '\0');
  return region;
}

}  // namespace

absl::StatusOr<std::string> AddJpegRestartMarkers(absl::string_view jpeg, int interval_mcus) {
  if (interval_mcus < 1 || interval_mcus > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AddJpegRestartMarkers: the interval must be 1..65535 MCUs, got ", interval_mcus));
  }
  if (jpeg.size() < 2 || static_cast<unsigned char>(jpeg[0]) != 0xFF ||
      static_cast<unsigned char>(jpeg[1]) != 0xD8) {
    return absl::InvalidArgumentError(
        absl::StrCat("AddJpegRestartMarkers: not a JPEG (", jpeg.size(),
                     " bytes, expected the SOI marker FF D8 at byte offset 0)"));
  }
  TranscodeState s;
  std::memset(&s, 0, sizeof(s));
  s.src.err = InitJpegErrorManager(&s.err);
  const bool ok = Transcode(&s, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(),
                            interval_mcus);
  std::string out;
  if (ok) out.assign(reinterpret_cast<const char*>(s.out), s.out_size);
  // Destroying aborts whatever was in progress and frees libjpeg's memory; the output buffer is
  // ours (jpeg_mem_dest's malloc).
  if (s.dst_created) jpeg_destroy_compress(&s.dst);
  if (s.src_created) jpeg_destroy_decompress(&s.src);
  std::free(s.out);
  if (ok) return out;
  if (s.unsupported) {
    return absl::FailedPreconditionError(
        "AddJpegRestartMarkers: only grayscale and YCbCr JPEGs are re-encoded");
  }
  return absl::DataLossError(absl::StrCat("AddJpegRestartMarkers: corrupt JPEG (", jpeg.size(),
                                          " bytes) while ", s.step, ": ", s.err.message));
}

std::optional<JpegRegion> ExtractJpegRegion(absl::string_view jpeg, const CropWindow& window,
                                            int scale_denom, int64_t margin) {
  const auto* d = reinterpret_cast<const unsigned char*>(jpeg.data());
  const size_t n = jpeg.size();
  const std::optional<SequentialLayout> layout = ParseLayout(d, n);
  if (!layout.has_value()) return std::nullopt;
  const std::optional<SegmentRange> g = CoveringSegments(*layout, window, scale_denom, margin);
  if (!g.has_value() || g->WholeImage()) return std::nullopt;
  thread_local std::vector<std::pair<size_t, size_t>> bounds;
  // Reused per thread (no allocation per image), but not kept at the size a crafted JPEG (a huge
  // declared image, a restart marker every 2 bytes) made it grow to: at most 64K entries stay.
  absl::Cleanup trim = [] {
    constexpr size_t kKept = size_t{1} << 16;
    if (bounds.capacity() > kKept) std::vector<std::pair<size_t, size_t>>().swap(bounds);
  };
  if (!FindSegments(d, n, layout->scan_begin, g->Segment(g->r1 - 1, g->c1 - 1), &bounds)) {
    return std::nullopt;
  }
  return CopySegments(d, *layout, *g, bounds);
}

}  // namespace sluice
