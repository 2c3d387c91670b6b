#ifndef SLUICE_TOOLS_OPTION_TABLE_H_
#define SLUICE_TOOLS_OPTION_TABLE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/json_writer.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "tools/command_line.h"

namespace sluice::tools {

// A command's options declared once each, in a table of rows: the name, the value's type (that
// of the config member it lands in), its default (the config's own), the help, and where it
// lands. The table declares the options for --help, parses the given ones into the config, and
// writes the config's values under their --json keys, so that adding an option is one row.
//
//   struct Config { int64_t batch = 64; bool json = false; };
//   const OptionTable<Config> table({{
//       Option("batch", "B", Field<Config>(&Config::batch), "images a step", {.min = 1}),
//       Flag("json", Field<Config>(&Config::json), "print one JSON object"),
//   }});
//   Config config;  // --help: "--batch B  images a step (default: 64)"
//   if (std::optional<int> exit = table.ParseOrReport(command_line, argc, argv, config)) {
//     return *exit;  // after --help, or "--batch takes an integer >= 1, not '0'"
//   }

// Where an option lands: a member of the config, or a member of a member, and so on.
template <typename Config, typename T>
struct FieldRef {
  std::function<T&(Config&)> at;
  std::function<const T&(const Config&)> read;
};

// Field<Config>(&Config::optimizer, &OptimizerOptions::momentum): config.optimizer.momentum.
template <typename Config, typename... Members>
auto Field(Members... path) {
  // A fold of .* over the path: ((config.*first).*second)...
  auto at = [path...](auto& config) -> auto& { return (config.*....*path); };
  using T = std::remove_reference_t<decltype(at(std::declval<Config&>()))>;
  return FieldRef<Config, T>{at, at};
}

// How an option's text becomes a value of type T, beyond its type.
template <typename T>
struct OptionSpec {
  // --help's "(default: X)". Unset: the default config's value, formatted; "": none shown.
  std::optional<std::string> shown_default;
  // Numbers: the smallest value accepted (and whether it is accepted itself), and the largest.
  double min = 0;
  CommandLine::Bound bound = CommandLine::Bound::kInclusive;
  std::optional<double> max;
  // An empty value is refused: "--NAME VALUE is required".
  bool required = false;
  // The key --json reports the value under; empty: not reported.
  std::string json;
  // Text to value, for types the table does not know or a message of the option's own; `flag`
  // is "--NAME", for the message.
  std::function<absl::StatusOr<T>(absl::string_view flag, const std::string& text)> parse;
  // Value to text, for --help's default and --json; unset: numbers and strings as they are.
  std::function<std::string(const T&)> format;
};

// One declared option, its type erased.
template <typename Config>
struct OptionRow {
  std::string name;
  std::string value_name;  // empty: a flag
  std::string help;
  std::string shown_default;
  bool required = false;
  std::string json;
  // Called when the option was given.
  std::function<absl::Status(const CommandLine&, Config&)> parse;
  std::function<void(const Config&, JsonWriter&)> write_json;
};

namespace option_table_internal {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

absl::Status NumberOutOfRange(absl::string_view name, double min, CommandLine::Bound bound,
                              double max, absl::string_view text);

// The option's text as a number or a string, within the spec's bounds.
// The largest value an integer option of type T takes: `max`, when set, and never more than T
// holds, so that the cast from int64_t cannot wrap (2^32 + 1 threads were 1).
template <typename T>
int64_t IntegerMax(std::optional<double> max) {
  const int64_t held = static_cast<int64_t>(
      std::min<uint64_t>(std::numeric_limits<T>::max(), std::numeric_limits<int64_t>::max()));
  return max ? std::min(static_cast<int64_t>(*max), held) : held;
}

template <typename T, typename Spec>
absl::StatusOr<T> ParseBuiltin(const CommandLine& command_line, const std::string& name,
                               const Spec& spec) {
  if constexpr (IsOptional<T>::value) {
    SLUICE_ASSIGN_OR_RETURN(T value,
                            ParseBuiltin<typename T::value_type>(command_line, name, spec));
    return value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return command_line.Value(name);
  } else if constexpr (std::is_integral_v<T>) {
    SLUICE_ASSIGN_OR_RETURN(
        const int64_t value,
        command_line.IntValue(name, static_cast<int64_t>(spec.min), IntegerMax<T>(spec.max)));
    return static_cast<T>(value);
  } else {
    static_assert(std::is_floating_point_v<T>);
    const absl::StatusOr<double> value = command_line.DoubleValue(name, spec.min, spec.bound);
    // With a maximum, any value out of range (NaN included) is told the whole range.
    if (spec.max && (!value.ok() || *value > *spec.max)) {
      return NumberOutOfRange(name, spec.min, spec.bound, *spec.max, command_line.Value(name));
    }
    if (!value.ok()) return value.status();
    return static_cast<T>(*value);
  }
}

// Whether ParseBuiltin reads a T, or the spec must bring a parse function.
template <typename T>
constexpr bool kBuiltin = std::is_same_v<T, std::string> || std::is_arithmetic_v<T>;
template <typename T>
constexpr bool kBuiltin<std::optional<T>> = kBuiltin<T>;

template <typename T>
absl::StatusOr<T> ParseValue(const CommandLine& command_line, const std::string& name,
                             const OptionSpec<T>& spec) {
  if (spec.parse) return spec.parse(absl::StrCat("--", name), command_line.Value(name));
  if constexpr (kBuiltin<T>) {
    return ParseBuiltin<T>(command_line, name, spec);
  } else {
    return absl::InternalError(absl::StrCat("--", name, " has no parse function"));
  }
}

template <typename T>
std::string Format(const T& value, const OptionSpec<T>& spec) {
  if (spec.format) return spec.format(value);
  if constexpr (IsOptional<T>::value) {
    return value ? absl::StrCat(*value) : "";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return absl::StrCat(value);
  } else {
    return "";
  }
}

// Types other than numbers and strings are written as their spec's format says.
template <typename T>
void WriteJson(const T& value, const OptionSpec<T>& spec, JsonWriter& json) {
  if (spec.format) {
    json.String(spec.format(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    json.RawValue(value ? "true" : "false");
  } else if constexpr (std::is_integral_v<T>) {
    json.Int(static_cast<int64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    json.Double(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    json.String(value);
  } else if constexpr (IsOptional<T>::value) {
    if (value) {
      WriteJson(*value, OptionSpec<typename T::value_type>{}, json);
    } else {
      json.Null();
    }
  } else {
    json.Null();
  }
}

}  // namespace option_table_internal

// A boolean flag (`--NAME`, `--NAME=false`), false unless given.
template <typename Config>
OptionRow<Config> Flag(std::string name, FieldRef<Config, bool> field, std::string help,
                       std::string json = "") {
  OptionRow<Config> row{.name = name, .help = std::move(help), .json = std::move(json)};
  row.parse = [name, at = field.at](const CommandLine& command_line, Config& config) {
    at(config) = command_line.Flag(name);
    return absl::OkStatus();
  };
  row.write_json = [read = field.read](const Config& config, JsonWriter& json) {
    json.RawValue(read(config) ? "true" : "false");
  };
  return row;
}

// An option taking a value (`--NAME VALUE`, `--NAME=VALUE`); absent, the config keeps its own.
template <typename Config, typename T>
OptionRow<Config> Option(std::string name, std::string value_name, FieldRef<Config, T> field,
                         std::string help, std::type_identity_t<OptionSpec<T>> spec = {}) {
  namespace internal = option_table_internal;
  OptionRow<Config> row{
      .name = name,
      .value_name = std::move(value_name),
      .help = std::move(help),
      .shown_default = spec.shown_default.value_or(internal::Format(field.read(Config{}), spec)),
      .required = spec.required,
      .json = spec.json};
  row.parse = [name, spec, at = field.at](const CommandLine& command_line,
                                          Config& config) -> absl::Status {
    absl::StatusOr<T> value = internal::ParseValue<T>(command_line, name, spec);
    if (!value.ok()) return value.status();
    at(config) = *std::move(value);
    return absl::OkStatus();
  };
  row.write_json = [spec, read = field.read](const Config& config, JsonWriter& json) {
    internal::WriteJson(read(config), spec, json);
  };
  return row;
}

template <typename Config>
class OptionTable {
 public:
  // The rows in groups (a command's data options, its model options...), in order.
  OptionTable(std::initializer_list<std::vector<OptionRow<Config>>> groups) {
    for (const std::vector<OptionRow<Config>>& group : groups) {
      rows_.insert(rows_.end(), group.begin(), group.end());
    }
  }

  // Declares every row's option on `command_line`, in the table's order (--help's).
  void Declare(CommandLine& command_line) const {
    for (const OptionRow<Config>& row : rows_) {
      if (row.value_name.empty()) {
        command_line.AddFlag(row.name, row.help);
      } else {
        command_line.AddOption(row.name, row.value_name, row.shown_default, row.help);
      }
    }
  }

  // Sets `config`'s members from the options given, in the table's order; InvalidArgument (a
  // usage error) names the first option whose value is wrong, or missing when required.
  absl::Status Parse(const CommandLine& command_line, Config& config) const {
    for (const OptionRow<Config>& row : rows_) {
      if (command_line.WasGiven(row.name)) SLUICE_RETURN_IF_ERROR(row.parse(command_line, config));
      if (row.required && command_line.Value(row.name).empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", row.name, " ", row.value_name, " is required"));
      }
    }
    return absl::OkStatus();
  }

  // A command's start: declares the rows on `command_line`, parses argv, sets `config` from the
  // options given and runs `check` (what no single option can check). nullopt when the command
  // goes on; otherwise the exit status, after printing the usage (--help) or the usage error.
  std::optional<int> ParseOrReport(
      CommandLine& command_line, int argc, const char* const* argv, Config& config,
      const std::function<absl::Status(const CommandLine&, Config&)>& check = nullptr) const {
    Declare(command_line);
    if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return exit;
    absl::Status status = Parse(command_line, config);
    if (status.ok() && check) status = check(command_line, config);
    if (!status.ok()) return command_line.ReportUsageError(status.message());
    return std::nullopt;
  }

  // The values of the rows with a JSON key, as members of the object `json` has open.
  void WriteJson(const Config& config, JsonWriter& json) const {
    for (const OptionRow<Config>& row : rows_) {
      if (row.json.empty()) continue;
      json.Key(row.json);
      row.write_json(config, json);
    }
  }

 private:
  std::vector<OptionRow<Config>> rows_;
};

// "a", "a or b", "a, b or c".
std::string JoinAlternatives(const std::vector<std::string>& names);

// A spec's parse for one of `choices`, by name: "--NAME takes a, b or c, not 'x'".
template <typename T>
std::function<absl::StatusOr<T>(absl::string_view, const std::string&)> Choice(
    std::vector<std::pair<std::string, T>> choices) {
  return [choices](absl::string_view flag, const std::string& text) -> absl::StatusOr<T> {
    std::vector<std::string> names;
    for (const auto& [name, value] : choices) {
      if (name == text) return value;
      names.push_back(name);
    }
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " takes ", JoinAlternatives(names), ", not '", text, "'"));
  };
}

// Choice among strings that are their own values.
std::function<absl::StatusOr<std::string>(absl::string_view, const std::string&)> Choice(
    const std::vector<std::string>& names);

// A spec's parse for a uint64_t: "--NAME takes an unsigned integer, not 'x'".
absl::StatusOr<uint64_t> UnsignedInteger(absl::string_view flag, const std::string& text);

// `value`, or its error with `prefix` before the message (a library's "precision: want ..."
// becomes the command line's "--precision: want ...").
template <typename T>
absl::StatusOr<T> Prefixed(absl::string_view prefix, absl::StatusOr<T> value) {
  if (value.ok()) return value;
  return WithContext(value.status(), prefix);
}
absl::Status Prefixed(absl::string_view prefix, const absl::Status& status);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_OPTION_TABLE_H_
