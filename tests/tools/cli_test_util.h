#ifndef SLUICE_TESTS_TOOLS_CLI_TEST_UTIL_H_
#define SLUICE_TESTS_TOOLS_CLI_TEST_UTIL_H_

// Helpers for testing the `sluice` binary from outside: run it, capture its
// stdout, stderr and exit status; write small TFRecord files by hand.

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/base/config.h"
#include "gtest/gtest.h"
#include "tests/file_util.h"

namespace sluice::cli_test {

struct CliResult {
  int exit_code = -1;  // -1: killed by a signal (a crash).
  std::string out;
  std::string err;
};

// The paths TempPath handed out, removed (files or trees) when the test program exits: the
// suite's runs left ~180 files and folders in /tmp each.
class TempPathRegistry {
 public:
  ~TempPathRegistry() {
    std::error_code ignored;
    for (const std::string& path : paths_) std::filesystem::remove_all(path, ignored);
  }
  void Add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_.push_back(path);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> paths_;
};

// A fresh path under the test's temporary directory, removed at exit.
inline std::string TempPath(const std::string& name) {
  static std::atomic<int> counter{0};
  static TempPathRegistry registry;
  std::string path = ::testing::TempDir() + "sluice_cli_" + std::to_string(getpid()) + "_" +
                     std::to_string(counter++) + "_" + name;
  registry.Add(path);
  return path;
}

// The number after `"key": ` in a JSON object printed on one line; -1 when the key is missing.
inline double JsonNumber(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + needle.size()));
}

// Single-quotes `arg` for /bin/sh.
inline std::string ShellQuote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// How long a run may take before it counts as hung: a guard, not a speed bound. Under a
// sanitizer the CLI's own kernels run 5-10x slower (TrainCommandTest's cnn run: 13 s in Release,
// 44-54 s under ASan + UBSan alone, past a minute beside another test), so it gets more, within
// ctest's 300-second limit.
#if defined(ABSL_HAVE_ADDRESS_SANITIZER) || defined(ABSL_HAVE_THREAD_SANITIZER) || \
    defined(ABSL_HAVE_MEMORY_SANITIZER)
inline constexpr int kHangSeconds = 240;
#else
inline constexpr int kHangSeconds = 60;
#endif

// Runs `sluice` with `args` (already shell-quoted where needed). A run that
// hangs is killed after kHangSeconds and reads as exit status 124.
inline CliResult RunSluice(const std::string& args) {
  std::string err_path = TempPath("stderr");
  std::string command = "timeout " + std::to_string(kHangSeconds) + " " +
                        ShellQuote(SLUICE_BINARY) + " " + args + " 2>" + ShellQuote(err_path);
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    return result;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = testing::ReadFile(err_path);
  std::remove(err_path.c_str());
  return result;
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

inline std::string TestData(const std::string& name) {
  return std::string(SLUICE_TEST_DATA) + "/" + name;
}

// CRC-32C (Castagnoli), bit by bit: slow and obviously right, independent of
// the library's table-driven one.
inline uint32_t Crc32c(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// The TFRecord framing: u64 length, masked CRC of the length, data, masked
// CRC of the data, all little-endian.
inline std::string FrameTFRecord(const std::string& data) {
  auto masked = [](uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; };
  auto little_endian = [](uint64_t value, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
    return out;
  };
  std::string length = little_endian(data.size(), 8);
  return length + little_endian(masked(Crc32c(length)), 4) + data +
         little_endian(masked(Crc32c(data)), 4);
}

inline void WriteTFRecordFile(const std::string& path, const std::vector<std::string>& records) {
  std::ofstream out(path, std::ios::binary);
  for (const std::string& record : records) out << FrameTFRecord(record);
  ASSERT_TRUE(out.good()) << path;
}

}  // namespace sluice::cli_test

#endif  // SLUICE_TESTS_TOOLS_CLI_TEST_UTIL_H_
