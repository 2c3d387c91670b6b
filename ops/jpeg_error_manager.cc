#include "ops/jpeg_error_manager.h"

// clang-format off: jerror.h after jpeglib.h.
#include <jerror.h>
// clang-format on

namespace sluice {
namespace {

void OnErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  longjmp(err->jump, 1);
}

void OnEmitMessage(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // Trace messages.
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
    err->truncated = true;
    cinfo->err->format_message(cinfo, err->message);
    longjmp(err->jump, 1);
  }
  ++cinfo->err->num_warnings;
}

}  // namespace

jpeg_error_mgr* InitJpegErrorManager(JpegErrorManager* err) {
  jpeg_std_error(&err->pub);
  err->pub.error_exit = OnErrorExit;
  err->pub.emit_message = OnEmitMessage;
  err->truncated = false;
  return &err->pub;
}

}  // namespace sluice
