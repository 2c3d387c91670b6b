#include "tools/option_table.h"

#include "absl/strings/numbers.h"
#include "core/status_context.h"

namespace sluice::tools {

namespace option_table_internal {

absl::Status NumberOutOfRange(absl::string_view name, double min, CommandLine::Bound bound,
                              double max, absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--", name, " takes a number in ", bound == CommandLine::Bound::kInclusive ? "[" : "(", min,
      ", ", max, "], not '", text, "'"));
}

}  // namespace option_table_internal

std::string JoinAlternatives(const std::vector<std::string>& names) {
  std::string joined;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) absl::StrAppend(&joined, i + 1 == names.size() ? " or " : ", ");
    absl::StrAppend(&joined, names[i]);
  }
  return joined;
}

std::function<absl::StatusOr<std::string>(absl::string_view, const std::string&)> Choice(
    const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> choices;
  for (const std::string& name : names) choices.emplace_back(name, name);
  return Choice(std::move(choices));
}

absl::StatusOr<uint64_t> UnsignedInteger(absl::string_view flag, const std::string& text) {
  uint64_t value;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " takes an unsigned integer, not '", text, "'"));
  }
  return value;
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return WithContext(status, prefix);
}

}  // namespace sluice::tools
