#ifndef SLUICE_TESTS_FILE_UTIL_H_
#define SLUICE_TESTS_FILE_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

namespace sluice::testing {

// The bytes of `path`; "" when it cannot be opened (the test then fails on what it expected to
// read, naming the contents).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Makes `contents` the whole of `path`.
inline void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_FILE_UTIL_H_
