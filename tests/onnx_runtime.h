#ifndef SLUICE_TESTS_ONNX_RUNTIME_H_
#define SLUICE_TESTS_ONNX_RUNTIME_H_

// ONNX Runtime (onnxruntime-node, tests/onnx/) and ONNX's checker (Debian's python3-onnx) as the
// ONNX tests run them: the reference that sluice's exported and imported models are compared
// with.

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tensor.h"
#include "tests/file_util.h"

namespace sluice::testing {

// The system interpreter, whatever else is on PATH: Debian's python3-onnx (and python3-torch,
// where installed) are its modules.
inline constexpr char kPython[] = "/usr/bin/python3";
inline const std::string kOnnxDir = std::string(SLUICE_TEST_DATA) + "/../onnx";

// Runs a shell command; its exit status, its stdout and stderr in `output`. A child that hangs
// (ONNX Runtime, the checker) is killed after 120 s and fails its test, rather than holding the
// whole suite.
inline int Shell(const std::string& command, std::string* output) {
  FILE* pipe = popen(("timeout 120 " + command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  output->clear();
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline void WriteFloats(const std::string& path, const Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(t.raw_data()), t.num_elements() * sizeof(float));
}

inline std::vector<float> ReadFloats(const std::string& path) {
  const std::string bytes = ReadFile(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// ONNX's checker with shape inference (full_check) on `path`; "" when it accepts the model.
inline std::string CheckerErrors(const std::string& path) {
  std::string output;
  const int rc = Shell(absl::StrCat(kPython,
                                    " -c 'import sys, onnx; "
                                    "onnx.checker.check_model(onnx.load(sys.argv[1]), "
                                    "full_check=True)' '",
                                    path, "'"),
                       &output);
  return rc == 0 ? "" : absl::StrCat("exit ", rc, ": ", output);
}

// The first output of the ONNX model at `path` on `input`, from ONNX Runtime (tests/onnx/).
inline absl::StatusOr<std::vector<float>> RunOnnxRuntime(const std::string& path,
                                                         const Tensor& input,
                                                         const std::string& scratch) {
  if (!std::filesystem::exists(kOnnxDir + "/node_modules/onnxruntime-node/package.json")) {
    return absl::FailedPreconditionError(
        absl::StrCat("ONNX Runtime is not installed in ", kOnnxDir,
                     "/node_modules: tools/setup.sh installs it (npm ci in tests/onnx)"));
  }
  const std::string in_path = scratch + "/input.f32", out_path = scratch + "/output.f32";
  WriteFloats(in_path, input);
  std::vector<std::string> dims;
  for (int i = 0; i < input.rank(); ++i) dims.push_back(absl::StrCat(input.dim(i)));
  std::string output;
  const int rc = Shell(absl::StrCat("node '", kOnnxDir, "/run_onnx.js' '", path, "' '", in_path,
                                    "' ", absl::StrJoin(dims, ","), " '", out_path, "'"),
                       &output);
  if (rc != 0) return absl::InternalError(absl::StrCat("run_onnx.js exit ", rc, ": ", output));
  return ReadFloats(out_path);
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_ONNX_RUNTIME_H_
