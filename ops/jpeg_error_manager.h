#ifndef SLUICE_OPS_JPEG_ERROR_MANAGER_H_
#define SLUICE_OPS_JPEG_ERROR_MANAGER_H_

// jpeglib.h needs FILE and size_t declared first.
// clang-format off
#include <csetjmp>
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>
// clang-format on

namespace sluice {

// libjpeg reports a fatal error by calling error_exit, which must not return: ours formats the
// message and longjmps back to the caller's setjmp. The functions between that setjmp and libjpeg
// must be C-style (no object with a destructor in their frames) and keep their state in a struct
// the C++ caller owns, which also owns the cleanup (jpeg_destroy_*). Used by the decoder and the
// restart-marker transcoder.
struct JpegErrorManager {
  jpeg_error_mgr pub;  // First member, so a j_common_ptr's err can be cast back.
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  // The data ended early ("premature end of JPEG file"): libjpeg would feed a fake EOI and fill
  // the rest of the image with grey; we stop instead (longjmp) and say so.
  bool truncated;
};

// Sets up `err` (libjpeg's defaults, then our error_exit and emit_message) and returns the
// pointer to store in a jpeg_{de,}compress_struct's err. Corrupt-data warnings are counted in
// pub.num_warnings, as libjpeg counts them, except truncation.
jpeg_error_mgr* InitJpegErrorManager(JpegErrorManager* err);

}  // namespace sluice

#endif  // SLUICE_OPS_JPEG_ERROR_MANAGER_H_
