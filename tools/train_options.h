#ifndef SLUICE_TOOLS_TRAIN_OPTIONS_H_
#define SLUICE_TOOLS_TRAIN_OPTIONS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "tools/command_line.h"
#include "tools/option_table.h"
#include "train/recipes/image_classifier.h"

namespace sluice::tools {

// What the options ask for: the library's run, and what only the command line decides.
struct TrainConfig {
  train::recipes::ImageClassifierOptions run;
  bool augment = false;  // --augment, or its default for the model (on for the resnets)
  bool json = false;
  bool distributed = false;
  int64_t collective_timeout = 300;  // seconds
};

// The options of `sluice train`, each declared once: --help, the parsing and --json read them.
const OptionTable<TrainConfig>& TrainOptions();

// What no single option can check: options that go together, or only with others, and the
// defaults that depend on other options. InvalidArgument (a usage error) names a bad option.
absl::Status CheckTrainConfig(const CommandLine& command_line, TrainConfig& config);

// Warns on stderr when --threads asks for more threads than this machine has cores: allowed (a
// job may be moved to a larger machine), but rarely meant. Called once for a job: by rank 0 of a
// distributed one.
void WarnOfMoreThreadsThanCores(const TrainConfig& config);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_TRAIN_OPTIONS_H_
