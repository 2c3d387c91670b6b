#ifndef SLUICE_TRAIN_CALLBACKS_CHECKPOINT_PATH_H_
#define SLUICE_TRAIN_CALLBACKS_CHECKPOINT_PATH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/callbacks/callback.h"

namespace sluice::train::callbacks {

// Keras' ModelCheckpoint file names: `pattern` with each "{name}" or "{name:spec}" replaced by
// the 1-based `epoch` ("epoch"), the 1-based `batch` within it when saving after a step
// ("batch"; unset at an epoch's end) or a value of `logs` ("val_loss"), as Python's str.format
// writes it: "ckpt-{epoch:02d}-{val_loss:.3f}" -> "ckpt-07-0.312". A spec is
// [0][width][.precision] then d, f, e or g (d rounds a log value to the nearest integer);
// without one an epoch prints as an integer and a value as Python's str() does ("0.25").
// "{{" and "}}" are literal braces. InvalidArgument naming an unknown name (and the known ones)
// or a spec it cannot write.
absl::StatusOr<std::string> FormatCheckpointPath(absl::string_view pattern, int64_t epoch,
                                                 const Logs& logs,
                                                 std::optional<int64_t> batch = std::nullopt);

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_CHECKPOINT_PATH_H_
