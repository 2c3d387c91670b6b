#ifndef SLUICE_TESTS_TEMP_DIR_H_
#define SLUICE_TESTS_TEMP_DIR_H_

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/file_util.h"

namespace sluice::testing {

// A new directory under the test's temporary directory, removed with everything in it when this
// goes out of scope.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string tmpl = ::testing::TempDir() + "sluice_test_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Writes `contents` to `name` (creating its parent directories) and returns its path.
  std::string Write(const std::string& name, const std::string& contents) const {
    const std::filesystem::path file = File(name);
    std::filesystem::create_directories(file.parent_path());
    WriteFile(file.string(), contents);
    return file.string();
  }
  // The names directly inside, sorted.
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      names.push_back(entry.path().filename());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TEMP_DIR_H_
