#ifndef SLUICE_TOOLS_COMMAND_LINE_H_
#define SLUICE_TOOLS_COMMAND_LINE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::tools {

// Exit statuses shared by every `sluice` command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // The command ran and something failed.
inline constexpr int kExitUsage = 2;    // The command line itself was wrong.
// Stopped by SIGTERM after writing a backup (`sluice train --backup-dir`): 128 + SIGTERM, what a
// shell reports for a job the signal ended, so schedulers treat it as the preemption it was.
inline constexpr int kExitPreempted = 143;

// One `sluice` subcommand. main.cc keeps the table; a command is one file that
// provides `Run`, which receives argv with argv[0] set to the command's name.
struct Command {
  const char* name;
  const char* summary;  // One line, shown by `sluice --help`.
  int (*run)(int argc, char** argv);
  // Whether its first argument names a subcommand (`sluice convert images`): `sluice help` then
  // takes one too.
  bool has_subcommands = false;
};

// The options of one command and their parsed values. Declare options, call
// ParseOrReport(), then read values. Accepted forms: `--name value`,
// `--name=value`, boolean `--flag` (or `--flag=true|false`), positional
// arguments anywhere, `--` to end options, and `-h`/`--help`.
class CommandLine {
 public:
  // `program` is what usage lines start with ("sluice inspect"); `summary` is
  // a sentence or two shown under it by --help.
  CommandLine(std::string program, std::string summary);

  // A boolean flag, false unless given.
  void AddFlag(std::string name, std::string help);
  // An option taking a value; `value_name` is shown in usage ("N"), and
  // `default_value` is returned when the option is absent and shown by --help.
  void AddOption(std::string name, std::string value_name, std::string default_value,
                 std::string help);
  // Positional arguments, named in usage ("FILE"). With `repeated`, one or
  // more are accepted; otherwise exactly one. Declare at most one repeated
  // positional, after the single ones.
  void AddPositional(std::string name, std::string help, bool repeated = false);

  // Parses argv[1..argc). Errors (unknown option, missing value, wrong number
  // of positional arguments) are InvalidArgument with a message naming the
  // offending argument.
  absl::Status Parse(int argc, const char* const* argv);

  // Parse() for a command's entry point: returns nullopt when the command
  // should go on; otherwise the exit status after printing the usage to stdout
  // (for --help: kExitOk) or the error to stderr (kExitUsage).
  std::optional<int> ParseOrReport(int argc, const char* const* argv);

  // Prints "<program>: <message>" and a pointer to --help on stderr, and when the line asked for
  // --json (a declared flag) also ReportFailure's JSON object on stdout, with the code
  // "INVALID_ARGUMENT"; returns kExitUsage. For values that parse but are invalid
  // (`--records abc`).
  int ReportUsageError(absl::string_view message) const;

  // The --help text, generated from the declarations.
  std::string Usage() const;

  bool help_requested() const { return help_requested_; }
  bool Flag(absl::string_view name) const;
  // The option's value, or its default when absent.
  const std::string& Value(absl::string_view name) const;
  // Whether the option or flag appeared on the command line.
  bool WasGiven(absl::string_view name) const;
  // The option's value as an integer in [min, max], or InvalidArgument naming the option
  // ("--batch takes an integer >= 1, not 'x'"), for ReportUsageError.
  absl::StatusOr<int64_t> IntValue(absl::string_view name, int64_t min,
                                   int64_t max = std::numeric_limits<int64_t>::max()) const;
  // Whether a lower bound admits the bound itself.
  enum class Bound { kExclusive, kInclusive };
  // The option's value as a number above `min` (or equal to it with kInclusive), or
  // InvalidArgument naming the option ("--lr takes a number > 0, not 'x'").
  absl::StatusOr<double> DoubleValue(absl::string_view name, double min,
                                     Bound bound = Bound::kExclusive) const;
  const std::vector<std::string>& positional() const { return positional_values_; }
  const std::string& program() const { return program_; }

 private:
  struct Option {
    std::string name;
    std::string value_name;  // Empty for boolean flags.
    std::string default_value;
    std::string help;
    bool is_flag = false;
    bool given = false;
    std::string value;
  };
  struct Positional {
    std::string name;
    std::string help;
    bool repeated = false;
  };

  Option* Find(absl::string_view name);
  const Option& Get(absl::string_view name) const;
  absl::Status SetValue(Option& option, absl::string_view value);

  std::string program_;
  std::string summary_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  std::vector<std::string> positional_values_;
  bool help_requested_ = false;
  bool json_requested_ = false;  // "--json" on the line, and the command declares that flag
};

// Reports a command's failure: "program: message" on stderr and, with `json`, one JSON object
// on stdout, {"error": message, "code": "DATA_LOSS"} (absl's name of the status code), so that a
// script reading --json output always gets an object. Returns kExitFailure.
int ReportFailure(absl::string_view program, const absl::Status& status, bool json);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_COMMAND_LINE_H_
