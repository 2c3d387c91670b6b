// The headers nearly every test file parses, precompiled once for every suite
// (tests/CMakeLists.txt): parsing them was over half of a test file's build.
// Third-party and standard headers only, so that no suite's header needs a
// module it does not link.
#ifndef SLUICE_TESTS_PRECOMPILED_HEADERS_H_
#define SLUICE_TESTS_PRECOMPILED_HEADERS_H_

#include <gmock/gmock.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/tbb/task_arena.h"

#endif  // SLUICE_TESTS_PRECOMPILED_HEADERS_H_
