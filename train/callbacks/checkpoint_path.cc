#include "train/callbacks/checkpoint_path.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice::train::callbacks {
namespace {

// Whether `spec` is [0][width][.precision] followed by one of d, f, e, g.
bool ValidSpec(absl::string_view spec) {
  if (spec.empty() || std::string("dfeg").find(spec.back()) == std::string::npos) return false;
  size_t i = 0;
  while (i + 1 < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) ++i;
  if (i + 1 < spec.size() && spec[i] == '.') {
    ++i;
    const size_t digits = i;
    while (i + 1 < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) ++i;
    if (i == digits) return false;
  }
  return i + 1 == spec.size() && spec.size() <= 8;
}

// `value` written as the spec says (printf's conversions are Python's for these).
std::string Write(double value, absl::string_view spec, bool integer) {
  char buffer[64];
  if (spec.empty()) {
    if (integer) return absl::StrCat(static_cast<int64_t>(value));
    std::snprintf(buffer, sizeof(buffer), "%.17g", value);  // round-trips, as Python's str()
    std::string shortest = buffer;
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
      if (std::strtod(buffer, nullptr) == value) {
        shortest = buffer;
        break;
      }
    }
    return shortest;
  }
  const std::string format = absl::StrCat("%", spec.substr(0, spec.size() - 1),
                                          spec.back() == 'd' ? "lld" : std::string(1, spec.back()));
  if (spec.back() == 'd') {
    std::snprintf(buffer, sizeof(buffer), format.c_str(), std::llround(value));
  } else {
    std::snprintf(buffer, sizeof(buffer), format.c_str(), value);
  }
  return buffer;
}

absl::StatusOr<std::string> Field(absl::string_view field, int64_t epoch,
                                  std::optional<int64_t> batch, const Logs& logs,
                                  absl::string_view pattern) {
  const size_t colon = field.find(':');
  const absl::string_view name = field.substr(0, colon);
  const absl::string_view spec =
      colon == absl::string_view::npos ? absl::string_view() : field.substr(colon + 1);
  if (!spec.empty() && !ValidSpec(spec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ModelCheckpoint: path \"", pattern, "\": cannot write {", field,
                     "}: a format is [0][width][.precision] then d, f, e or g, as in {epoch:02d}"));
  }
  if (name == "epoch") return Write(static_cast<double>(epoch), spec, /*integer=*/true);
  if (name == "batch" && batch) return Write(static_cast<double>(*batch), spec, /*integer=*/true);
  if (auto it = logs.find(std::string(name)); it != logs.end()) {
    return Write(it->second, spec, /*integer=*/false);
  }
  std::vector<std::string> known = {"epoch"};
  if (batch) known.push_back("batch");
  for (const auto& [key, value] : logs) known.push_back(key);
  return absl::InvalidArgumentError(
      absl::StrCat("ModelCheckpoint: path \"", pattern, "\" names {", name,
                   "}, which the logs lack; known: ", absl::StrJoin(known, ", ")));
}

}  // namespace

absl::StatusOr<std::string> FormatCheckpointPath(absl::string_view pattern, int64_t epoch,
                                                 const Logs& logs, std::optional<int64_t> batch) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out.push_back(c);  // "{{" or "}}"
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    const size_t end = pattern.find('}', i);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("ModelCheckpoint: path \"", pattern, "\" has a '{' without its '}'"));
    }
    absl::StatusOr<std::string> field =
        Field(pattern.substr(i + 1, end - i - 1), epoch, batch, logs, pattern);
    if (!field.ok()) return field.status();
    out += *field;
    i = end;
  }
  return out;
}

}  // namespace sluice::train::callbacks
