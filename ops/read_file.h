#ifndef SLUICE_OPS_READ_FILE_H_
#define SLUICE_OPS_READ_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

struct ReadFileOptions {
  // A file larger than this is ResourceExhausted, naming the file and the limit, before anything
  // is allocated for it: a pipeline that lists a directory can meet a multi-GB file that is not
  // the image it expected.
  int64_t max_bytes = int64_t{1} << 30;
};

// The whole contents of the file at `path`, as a bytes scalar: tf.io.read_file. For a pipeline
// over loose files, e.g. FromTensorSlices(paths).Map(ReadFile, then decode).
//
// Errors name the path: NotFound, PermissionDenied, InvalidArgument for a directory or another
// file that is not a regular file, ResourceExhausted past max_bytes, and DataLoss when the file
// shrinks while it is read.
absl::StatusOr<Tensor> ReadFile(const std::string& path, const ReadFileOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_OPS_READ_FILE_H_
