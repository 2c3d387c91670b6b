#include "tools/command_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/json_writer.h"

namespace sluice::tools {
namespace {

// Declaring or reading an option that does not exist is a bug in the command,
// not a user error, so it stops the program.
[[noreturn]] void Die(absl::string_view message) {
  std::fprintf(stderr, "internal error: %.*s\n", static_cast<int>(message.size()), message.data());
  std::abort();
}

// What a script reading --json gets instead of a result: {"error": message, "code": "DATA_LOSS"}.
void PrintJsonError(absl::string_view message, absl::StatusCode code) {
  std::fflush(stdout);
  JsonWriter out;
  out.BeginObject();
  out.Key("error");
  out.String(std::string(message));
  out.Key("code");
  out.String(absl::StatusCodeToString(code));
  out.EndObject();
  std::printf("%s\n", out.str().c_str());
}

}  // namespace

CommandLine::CommandLine(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void CommandLine::AddFlag(std::string name, std::string help) {
  if (Find(name) != nullptr || name == "help") Die(absl::StrCat("option declared twice: ", name));
  options_.push_back({.name = std::move(name),
                      .default_value = "false",
                      .help = std::move(help),
                      .is_flag = true});
}

void CommandLine::AddOption(std::string name, std::string value_name, std::string default_value,
                            std::string help) {
  if (Find(name) != nullptr || name == "help") Die(absl::StrCat("option declared twice: ", name));
  options_.push_back({.name = std::move(name),
                      .value_name = std::move(value_name),
                      .default_value = std::move(default_value),
                      .help = std::move(help)});
}

void CommandLine::AddPositional(std::string name, std::string help, bool repeated) {
  if (!positionals_.empty() && positionals_.back().repeated) {
    Die(absl::StrCat("positional declared after a repeated one: ", name));
  }
  positionals_.push_back({.name = std::move(name), .help = std::move(help), .repeated = repeated});
}

CommandLine::Option* CommandLine::Find(absl::string_view name) {
  for (Option& option : options_) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

const CommandLine::Option& CommandLine::Get(absl::string_view name) const {
  for (const Option& option : options_) {
    if (option.name == name) return option;
  }
  Die(absl::StrCat("option never declared: ", name));
}

absl::Status CommandLine::SetValue(Option& option, absl::string_view value) {
  if (option.given) {
    return absl::InvalidArgumentError(absl::StrCat("option --", option.name, " given twice"));
  }
  if (option.is_flag) {
    if (value != "true" && value != "false") {
      return absl::InvalidArgumentError(absl::StrCat(
          "flag --", option.name, " takes no value, or =true or =false; got '", value, "'"));
    }
  }
  option.given = true;
  option.value = std::string(value);
  return absl::OkStatus();
}

absl::Status CommandLine::Parse(int argc, const char* const* argv) {
  positional_values_.clear();
  help_requested_ = false;
  json_requested_ = false;
  for (Option& option : options_) {
    option.given = false;
    option.value.clear();
  }
  // --help wins over any other mistake on the line: a user asking for help
  // should get it, not an error about the argument they are unsure of.
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    // Known before any mistake is met, so that a usage error answers --json in JSON too. No
    // option takes "--json" as its value (values starting with "--" are refused below).
    if ((arg == "--json" || arg == "--json=true") && Find("json") != nullptr) {
      json_requested_ = Find("json")->is_flag;
    }
  }

  bool options_ended = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (options_ended || arg == "-" || !absl::StartsWith(arg, "-")) {
      positional_values_.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '", arg, "'"));
    }
    absl::string_view body = arg.substr(2);
    std::optional<absl::string_view> inline_value;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    Option* option = Find(body);
    if (option == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '--", body, "'"));
    }
    if (option->is_flag) {
      if (absl::Status s = SetValue(*option, inline_value.value_or("true")); !s.ok()) return s;
      continue;
    }
    if (inline_value.has_value()) {
      if (absl::Status s = SetValue(*option, *inline_value); !s.ok()) return s;
      continue;
    }
    // The next argument is the value, unless it is another option: then the
    // value was forgotten, and taking "--json" as a record count would only
    // produce a more confusing error. `--name=--value` still works.
    if (i + 1 >= argc || absl::StartsWith(argv[i + 1], "--")) {
      return absl::InvalidArgumentError(absl::StrCat("option --", option->name,
                                                     " needs a value (--", option->name, " ",
                                                     option->value_name, ")"));
    }
    if (absl::Status s = SetValue(*option, argv[++i]); !s.ok()) return s;
  }

  // Match the positional values against the declarations.
  size_t required = positionals_.size();
  bool repeated = !positionals_.empty() && positionals_.back().repeated;
  if (positional_values_.size() < required) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing argument ", positionals_[positional_values_.size()].name));
  }
  if (!repeated && positional_values_.size() > required) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", positional_values_[required], "'"));
  }
  return absl::OkStatus();
}

std::optional<int> CommandLine::ParseOrReport(int argc, const char* const* argv) {
  absl::Status status = Parse(argc, argv);
  if (!status.ok()) return ReportUsageError(status.message());
  if (help_requested_) {
    std::string usage = Usage();
    std::fwrite(usage.data(), 1, usage.size(), stdout);
    return kExitOk;
  }
  return std::nullopt;
}

int CommandLine::ReportUsageError(absl::string_view message) const {
  std::fprintf(stderr, "%s: %.*s\nRun '%s --help' for usage.\n", program_.c_str(),
               static_cast<int>(message.size()), message.data(), program_.c_str());
  if (json_requested_) PrintJsonError(message, absl::StatusCode::kInvalidArgument);
  return kExitUsage;
}

std::string CommandLine::Usage() const {
  std::string usage = absl::StrCat("Usage: ", program_, " [options]");
  for (const Positional& p : positionals_) {
    absl::StrAppend(&usage, " ", p.name, p.repeated ? "..." : "");
  }
  absl::StrAppend(&usage, "\n\n", summary_, "\n");

  // Two columns: the left one sized to the longest entry.
  std::vector<std::pair<std::string, std::string>> rows;
  for (const Positional& p : positionals_) {
    rows.emplace_back(absl::StrCat(p.name, p.repeated ? "..." : ""), p.help);
  }
  size_t first_option_row = rows.size();
  for (const Option& o : options_) {
    std::string left = absl::StrCat("--", o.name);
    std::string right = o.help;
    if (!o.is_flag) {
      absl::StrAppend(&left, " ", o.value_name);
      // An option without a default (required, or off unless given) shows none.
      if (!o.default_value.empty()) absl::StrAppend(&right, " (default: ", o.default_value, ")");
    }
    rows.emplace_back(std::move(left), std::move(right));
  }
  rows.emplace_back("-h, --help", "show this help and exit");
  size_t width = 0;
  for (const auto& [left, right] : rows) width = std::max(width, left.size());

  for (size_t i = 0; i < rows.size(); ++i) {
    if (i == 0 && first_option_row > 0) absl::StrAppend(&usage, "\nArguments:\n");
    if (i == first_option_row) absl::StrAppend(&usage, "\nOptions:\n");
    const auto& [left, right] = rows[i];
    absl::StrAppend(&usage, "  ", left, std::string(width - left.size() + 2, ' '), right, "\n");
  }
  return usage;
}

bool CommandLine::Flag(absl::string_view name) const {
  const Option& option = Get(name);
  if (!option.is_flag) Die(absl::StrCat("--", name, " is not a flag"));
  return option.given && option.value == "true";
}

const std::string& CommandLine::Value(absl::string_view name) const {
  const Option& option = Get(name);
  if (option.is_flag) Die(absl::StrCat("--", name, " is a flag"));
  return option.given ? option.value : option.default_value;
}

bool CommandLine::WasGiven(absl::string_view name) const { return Get(name).given; }

absl::StatusOr<int64_t> CommandLine::IntValue(absl::string_view name, int64_t min,
                                              int64_t max) const {
  const std::string& text = Value(name);
  int64_t value;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    const std::string range = max == std::numeric_limits<int64_t>::max()
                                  ? absl::StrCat(">= ", min)
                                  : absl::StrCat("in ", min, "..", max);
    // Digits that SimpleAtoi refused overflowed: say so, or "not '99999999999999999999'" reads
    // as if it were not an integer.
    const absl::string_view digits = absl::StripPrefix(text, "+");
    const bool too_large = !digits.empty() && !absl::SimpleAtoi(text, &value) &&
                           std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit);
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " takes an integer ", range, ", not '", text, "'",
                     too_large ? absl::StrCat(" (beyond ", max, ")") : ""));
  }
  return value;
}

absl::StatusOr<double> CommandLine::DoubleValue(absl::string_view name, double min,
                                                Bound bound) const {
  const std::string& text = Value(name);
  double value;
  const bool inclusive = bound == Bound::kInclusive;
  // Written so that NaN fails both comparisons. Decimal only: strtod's hex ("0x10" read as 16)
  // is no one's learning rate.
  if (absl::StrContains(text, 'x') || absl::StrContains(text, 'X') ||
      !absl::SimpleAtod(text, &value) || !(inclusive ? value >= min : value > min) ||
      !std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, " takes a number ", inclusive ? ">= " : "> ", min, ", not '", text, "'"));
  }
  return value;
}

int ReportFailure(absl::string_view program, const absl::Status& status, bool json) {
  std::fflush(stdout);
  std::fprintf(stderr, "%.*s: %.*s\n", static_cast<int>(program.size()), program.data(),
               static_cast<int>(status.message().size()), status.message().data());
  if (json) PrintJsonError(status.message(), status.code());
  return kExitFailure;
}

}  // namespace sluice::tools
