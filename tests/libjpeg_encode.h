#ifndef SLUICE_TESTS_LIBJPEG_ENCODE_H_
#define SLUICE_TESTS_LIBJPEG_ENCODE_H_

// jpeglib.h uses size_t and FILE without including them.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include <jpeglib.h>
// clang-format on

#include <string>
#include <vector>

namespace sluice::testing {

// What EncodeWithLibjpeg writes: what TurboJPEG 2.1's API cannot (restart markers, YCCK, a chosen
// progression), for tests and fuzz seeds that must not come from our own encoder.
struct LibjpegEncoding {
  int width = 0;
  int height = 0;
  int components = 3;
  J_COLOR_SPACE in_space = JCS_RGB;
  J_COLOR_SPACE jpeg_space = JCS_UNKNOWN;  // JCS_UNKNOWN: libjpeg's default for in_space
  int quality = 75;
  bool progressive = false;
  int restart_interval = 0;  // in MCUs
  int restart_rows = 0;      // in MCU rows
  bool subsample = true;     // 3 components: libjpeg's 4:2:0, else 4:4:4
};

// Encodes with libjpeg itself; sample(x, y, channel) gives each sample. libjpeg's default error
// handler ends the process on a failure, which a test or a seed writer may do.
template <typename F>
std::string EncodeWithLibjpeg(const LibjpegEncoding& e, F sample) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  jpeg_mem_dest(&c, &out, &out_size);
  c.image_width = static_cast<JDIMENSION>(e.width);
  c.image_height = static_cast<JDIMENSION>(e.height);
  c.input_components = e.components;
  c.in_color_space = e.in_space;
  jpeg_set_defaults(&c);
  if (e.jpeg_space != JCS_UNKNOWN) jpeg_set_colorspace(&c, e.jpeg_space);
  jpeg_set_quality(&c, e.quality, TRUE);
  if (e.progressive) jpeg_simple_progression(&c);
  c.restart_interval = static_cast<unsigned int>(e.restart_interval);
  c.restart_in_rows = e.restart_rows;
  if (e.components == 3 && !e.subsample) {
    for (int i = 0; i < 3; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  }
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(static_cast<size_t>(e.width) * e.components);
  while (c.next_scanline < c.image_height) {
    const int y = static_cast<int>(c.next_scanline);
    for (int x = 0; x < e.width; ++x) {
      for (int ch = 0; ch < e.components; ++ch) {
        row[static_cast<size_t>(x) * e.components + ch] =
            static_cast<unsigned char>(sample(x, y, ch));
      }
    }
    JSAMPROW rows[1] = {row.data()};
    jpeg_write_scanlines(&c, rows, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::string jpeg(reinterpret_cast<const char*>(out), out_size);
  std::free(out);
  return jpeg;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_LIBJPEG_ENCODE_H_
