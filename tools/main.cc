// The `sluice` command line: dispatches `sluice COMMAND [args]` to one of the
// commands in kCommands. A new command is one file providing
// `int Run...(int argc, char** argv)` and one row in the table below.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tools/bench_command.h"
#include "tools/command_line.h"
#include "tools/convert_command.h"
#include "tools/export_command.h"
#include "tools/import_command.h"
#include "tools/inspect_command.h"
#include "tools/predict_command.h"
#include "tools/train_command.h"

namespace sluice::tools {
namespace {

constexpr char kVersion[] = SLUICE_VERSION;  // From CMake's project() version.

constexpr Command kCommands[] = {
    {"inspect", "count, verify and print the records of TFRecord files", RunInspect},
    {"convert", "convert Fashion-MNIST or a folder of JPEGs into TFRecord shards", RunConvert,
     /*has_subcommands=*/true},
    {"bench", "measure an image input pipeline: images/s, per-stage times, bottleneck", RunBench},
    {"train", "train an image classifier on TFRecords or class folders; print accuracy, images/s",
     RunTrain},
    {"predict", "classify JPEG files or TFRecords with a saved model: top-k classes", RunPredict},
    {"export", "write a saved model as ONNX (ONNX Runtime, TensorRT, OpenVINO)", RunExport},
    {"import", "build and save a model from an ONNX file (PyTorch, tf2onnx, model zoos)",
     RunImport},
};

const Command* FindCommand(absl::string_view name) {
  for (const Command& command : kCommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

std::string GeneralUsage() {
  std::string usage =
      "Usage: sluice COMMAND [options] [args]\n"
      "       sluice help COMMAND | sluice COMMAND --help\n"
      "       sluice --version\n"
      "\n"
      "sluice streams training data from TFRecord files into a model.\n"
      "\n"
      "Commands:\n";
  size_t width = 0;
  for (const Command& command : kCommands)
    width = std::max(width, absl::string_view(command.name).size());
  for (const Command& command : kCommands) {
    absl::StrAppend(&usage, "  ", command.name,
                    std::string(width - absl::string_view(command.name).size() + 2, ' '),
                    command.summary, "\n");
  }
  return usage;
}

int UsageError(absl::string_view message) {
  std::fprintf(stderr, "sluice: %.*s\nRun 'sluice --help' for the list of commands.\n",
               static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    // No command: the list goes to stderr with a usage status, so that a
    // script calling `sluice "$cmd"` with an empty $cmd fails.
    std::string usage = GeneralUsage();
    std::fwrite(usage.data(), 1, usage.size(), stderr);
    return kExitUsage;
  }
  absl::string_view first = argv[1];
  if (first == "--version") {
    if (argc > 2) return UsageError("--version takes no arguments");
    std::printf("sluice %s\n", kVersion);
    return kExitOk;
  }
  // `sluice help [COMMAND [SUBCOMMAND]]`, and `sluice --help COMMAND` as git takes it.
  if (first == "help" || first == "--help" || first == "-h") {
    if (argc == 2) {
      std::string usage = GeneralUsage();
      std::fwrite(usage.data(), 1, usage.size(), stdout);
      return kExitOk;
    }
    const Command* command = FindCommand(argv[2]);
    if (command == nullptr) return UsageError(absl::StrCat("unknown command '", argv[2], "'"));
    if (argc > (command->has_subcommands ? 4 : 3)) {
      return UsageError(command->has_subcommands
                            ? "'help' takes a command name and at most a subcommand"
                            : "'help' takes one command name");
    }
    // The command prints its own usage (`sluice convert images --help`'s for `sluice help
    // convert images`), so every spelling shows the same text.
    std::string name = command->name;
    std::string sub = argc == 4 ? argv[3] : "";
    std::string help = "--help";
    std::vector<char*> help_argv = {name.data()};
    if (!sub.empty()) help_argv.push_back(sub.data());
    help_argv.push_back(help.data());
    help_argv.push_back(nullptr);
    return command->run(static_cast<int>(help_argv.size()) - 1, help_argv.data());
  }
  if (absl::StartsWith(first, "-")) {
    return UsageError(absl::StrCat("unknown option '", first, "'"));
  }
  const Command* command = FindCommand(first);
  if (command == nullptr) return UsageError(absl::StrCat("unknown command '", first, "'"));
  return command->run(argc - 1, argv + 1);
}

}  // namespace
}  // namespace sluice::tools

int main(int argc, char** argv) {
  // OMP_WAIT_POLICY=passive is asked for by the CPU backend itself, before libgomp loads
  // (train/backend/cpu/cpu_threads.cc), for every program that links it.
  return sluice::tools::Main(argc, argv);
}
