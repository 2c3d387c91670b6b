#include "tools/train_options.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/runtime.h"
#include "core/status_macros.h"
#include "dataset/auto_shard.h"
#include "tools/device_option.h"
#include "train/backend/compute_precision.h"
#include "train/models/model_zoo.h"
#include "train/recipes/optimizer.h"

namespace sluice::tools {
namespace {

using train::recipes::Augmentation;
using Classifier = train::recipes::ImageClassifierOptions;
using Optimizer = train::recipes::OptimizerOptions;
using Schedule = train::recipes::ScheduleOptions;
using Callbacks = train::recipes::CallbackOptions;
using TrainRow = OptionRow<TrainConfig>;

// More threads than any machine has cores only slows training (each one a kernel's share); the
// bound also keeps the backend's int from wrapping.
constexpr double kMaxThreads = 4096;

template <typename... Members>
auto In(Members... path) {
  return Field<TrainConfig>(&TrainConfig::run, path...);
}

absl::StatusOr<double> OpenUnitInterval(absl::string_view flag, const std::string& text) {
  double value;
  if (!absl::SimpleAtod(text, &value) || !(value > 0) || !(value < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " takes a number in (0, 1), not '", text, "'"));
  }
  return value;
}

absl::StatusOr<std::pair<int64_t, int64_t>> StepRange(absl::string_view flag,
                                                      const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  std::pair<int64_t, int64_t> steps;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &steps.first) ||
      !absl::SimpleAtoi(parts[1], &steps.second) || steps.first < 1 || steps.second < steps.first) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be FROM:TO with 1 <= FROM <= TO, got '", text, "'"));
  }
  return steps;
}

std::vector<TrainRow> DataAndModelRows() {
  return {
      Option("data", "DIR", In(&Classifier::tfrecord_dir),
             "folder with train-*.tfrecord and test-*.tfrecord"),
      Option("images", "DIR", In(&Classifier::image_dir),
             "instead of --data: a folder of class folders of JPEGs (ImageDatasetFromDirectory), "
             "RGB, split into training and validation subsets; the validation subset is the test "
             "set"),
      Option("image-size", "N", In(&Classifier::image_size),
             "with --images: height and width of the images", {.min = 8, .max = 4096}),
      Option("validation-split", "X", In(&Classifier::validation_split),
             "with --images: the share of the images held out as the test set",
             {.parse = OpenUnitInterval}),
      Option("model", "NAME", In(&Classifier::model),
             absl::StrCat(absl::StrJoin(train::models::ModelNames(), ", "),
                          " (their layers: docs/training.md, the model zoo)"),
             {.json = "model"}),
      Option("base", "MODEL.onnx", In(&Classifier::base_onnx),
             "instead of --model: transfer learning from a pretrained base (ONNX, as `sluice "
             "import` reads it) cut at its global average pooling, with Keras' head on it "
             "(Dense 256 + ReLU, Dropout 0.5, Dense classes)",
             {.json = "base"}),
      Option("freeze-base-epochs", "N", In(&Classifier::freeze_base_epochs),
             "with --base: train the head alone on the frozen base for the first N of --epochs, "
             "then fine-tune everything at --fine-tune-lr",
             {.json = "freeze_base_epochs"}),
      Option("fine-tune-lr", "X", In(&Classifier::fine_tune_learning_rate),
             "with --freeze-base-epochs: the learning rate after the base is unfrozen",
             {.bound = CommandLine::Bound::kExclusive}),
      Option("epochs", "N", In(&Classifier::epochs), "passes over the training set",
             {.min = 1, .json = "epochs"}),
      Option("batch", "B", In(&Classifier::batch_size), "images per training step",
             {.min = 1, .json = "batch"}),
  };
}

std::vector<TrainRow> OptimizerRows() {
  return {
      Option("optimizer", "NAME", In(&Classifier::optimizer, &Optimizer::name),
             "sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax or nadam (Keras defaults)"),
      Option("lr", "X", In(&Classifier::optimizer, &Optimizer::learning_rate),
             "learning rate (sgd 0.01, the others 0.001 by default)",
             {.shown_default = "optimizer's default", .bound = CommandLine::Bound::kExclusive}),
      Option("momentum", "M", In(&Classifier::optimizer, &Optimizer::momentum),
             "SGD's and RMSprop's momentum", {.max = 1}),
      Option("weight-decay", "X", In(&Classifier::optimizer, &Optimizer::weight_decay),
             "decoupled weight decay: w -= lr * X * w each step (Keras' weight_decay)",
             {.shown_default = "adamw 0.004, others 0"}),
      Option("schedule", "NAME", In(&Classifier::optimizer, &Optimizer::schedule, &Schedule::name),
             "learning-rate schedule: constant, cosine (to 0 at the end) or step (/10 at 50% and "
             "75% of the steps)"),
      Option("warmup-steps", "N",
             In(&Classifier::optimizer, &Optimizer::schedule, &Schedule::warmup_steps),
             "linear warmup from 0 over N steps"),
      Option("clip-norm", "X", In(&Classifier::optimizer, &Optimizer::clip_norm),
             "clip gradients to this global norm (0: off)"),
      Option("label-smoothing", "X", In(&Classifier::label_smoothing),
             "in [0, 1]: train towards (1 - X) on the label and X spread evenly over the classes "
             "(CategoricalCrossentropy's label_smoothing); the logged losses include it",
             {.max = 1, .json = "label_smoothing"}),
  };
}

std::vector<TrainRow> ComputeRows() {
  const std::string resnets = absl::StrJoin(train::models::ResNetNames(), " and ");
  return {
      Option("precision", "POLICY", In(&Classifier::precision),
             "float32, mixed_bfloat16 (matmuls and convolutions multiply in bfloat16; needs "
             "AVX512-BF16 on the CPU) or mixed_float16 (CUDA only)",
             {.json = "precision",
              .parse = [](absl::string_view,
                          const std::string& text) -> absl::StatusOr<train::backend::Precision> {
                return Prefixed("--", train::backend::ParsePrecision(text));
              },
              .format = train::backend::PrecisionName}),
      Option("device", "DEV", In(&Classifier::device),
             "where the model trains: cpu, cuda or cuda:N (needs a CUDA build and a GPU)",
             DeviceOptionSpec()),
      Option("accumulate", "N", In(&Classifier::accumulate), "apply the mean gradient of N batches",
             {.min = 1, .max = INT_MAX}),
      Option("limit", "N", In(&Classifier::limit), "train on the first N training records only",
             {.shown_default = "all", .min = 1}),
      Flag("augment", Field<TrainConfig>(&TrainConfig::augment),
           absl::StrCat("augment the training images, as --augmentation says (default for ",
                        resnets, "; --augment=false turns it off)")),
      Option("augmentation", "NAME", In(&Classifier::augmentation),
             "with --augment: pad-crop (random flip and 4-pixel pad-crop, fused into the decode) "
             "or keras (Keras' RandomFlip(\"horizontal\"), RandomTranslation(0.1, 0.1) and "
             "RandomZoom(0.1) on each batch)",
             {.shown_default = "pad-crop with --data, keras with --images",
              .json = "augmentation",
              .parse = Choice<Augmentation>(
                  {{"pad-crop", Augmentation::kPadCrop}, {"keras", Augmentation::kKeras}}),
              .format = train::recipes::AugmentationName}),
      Flag("recompute", In(&Classifier::recompute),
           absl::StrCat(resnets,
                        " only: recompute each residual block's activations in the backward pass "
                        "instead of keeping them (tf.recompute_grad): less memory, a slower step, "
                        "the same training"),
           "recompute"),
  };
}

std::vector<TrainRow> OutputRows() {
  return {
      Flag("check-numerics", In(&Classifier::check_numerics),
           "stop at the first op that produces a NaN or an Inf, naming the op, the layer and the "
           "step (tf.debugging.enable_check_numerics; slow)"),
      Flag("terminate-on-nan", In(&Classifier::callbacks, &Callbacks::terminate_on_nan),
           "fail at the first step whose loss is NaN or infinite, naming it, before any backup, "
           "checkpoint or --save of it (Keras' TerminateOnNaN; reads the loss every step)"),
      Flag("eager", In(&Classifier::run_eagerly),
           "run each training step op by op (Keras' run_eagerly, for debugging) instead of "
           "tracing it on the first batch and replaying it"),
      Flag("summary", In(&Classifier::summary),
           "print the model's layers, output shapes and parameter counts"),
      Option("profile", "DIR", In(&Classifier::profile_dir),
             "profile steps --profile-steps into DIR: a Chrome trace (Perfetto, "
             "chrome://tracing), the same for TensorBoard's profile plugin, and a summary printed "
             "at the end"),
      Option("profile-steps", "FROM:TO", In(&Classifier::profile_steps),
             "the global steps (1-based, inclusive) that --profile records",
             {.parse = StepRange,
              .format =
                  [](const auto& steps) { return absl::StrCat(steps.first, ":", steps.second); }}),
      Flag("validate", In(&Classifier::validate),
           "evaluate on the test set after each epoch (val_* metrics)"),
      Option("early-stopping", "P", In(&Classifier::callbacks, &Callbacks::early_stopping_patience),
             "stop when val_loss has not improved for P epochs, restoring the best weights "
             "(implies --validate; 0: off)"),
      Option("logdir", "DIR", In(&Classifier::callbacks, &Callbacks::log_dir),
             "write TensorBoard event files under DIR"),
      Option("checkpoint", "PATH", In(&Classifier::callbacks, &Callbacks::checkpoint),
             "save a checkpoint (weights, optimizer, input position) after each epoch"),
      Flag("resume", In(&Classifier::resume), "continue from --checkpoint PATH when it exists"),
      Option("backup-dir", "DIR", In(&Classifier::callbacks, &Callbacks::backup_dir),
             "Keras' BackupAndRestore: full checkpoints in DIR after each epoch (or every "
             "--checkpoint-every steps), the newest --keep-checkpoints kept; a run started again "
             "with the same DIR resumes from the newest readable one, exact to the step, and a "
             "run deletes them once its test evaluation and --save are written; a SIGTERM (a "
             "scheduler's preemption) writes a backup after the step in progress and exits with "
             "status 143"),
      Option("checkpoint-every", "N",
             In(&Classifier::callbacks, &Callbacks::checkpoint_every_steps),
             "save --checkpoint or --backup-dir every N global steps instead of after each epoch",
             {.shown_default = "each epoch", .min = 1}),
      Option("keep-checkpoints", "K", In(&Classifier::callbacks, &Callbacks::keep_checkpoints),
             "with --backup-dir: the newest K backups kept", {.min = 1}),
      Option("save", "DIR", In(&Classifier::save_dir),
             "after training, save the model to DIR (architecture, weights, class names, the "
             "optimizer's state): what `sluice predict --model DIR` and `sluice export` load"),
  };
}

std::vector<TrainRow> RunRows() {
  return {
      Option("threads", "N", In(&Classifier::cpu_threads), "threads for the training kernels",
             {.shown_default = "all cores", .min = 1, .max = kMaxThreads}),
      Option("seed", "S", In(&Classifier::seed),
             "seed of initializers, shuffling and augmentation"),
      Flag("skip-errors", In(&Classifier::skip_errors),
           "skip (and count) unreadable records instead of failing"),
      Flag("json", Field<TrainConfig>(&TrainConfig::json),
           "print one JSON object (test_accuracy, train_images_per_second...)"),
      Flag("distributed", Field<TrainConfig>(&TrainConfig::distributed),
           "data-parallel over the processes mpirun (or srun) started, one rank each: --batch and "
           "--threads are per rank, rank 0 prints and writes the files"),
      Option("collective-timeout", "S", Field<TrainConfig>(&TrainConfig::collective_timeout),
             "with --distributed: fail, naming the rank, when a peer has not joined a collective "
             "within S seconds",
             {.min = 1}),
      Option("auto-shard", "POLICY", In(&Classifier::auto_shard),
             "with --distributed: how each rank takes its part of the data: file, data (every "
             "N-th batch), auto (file when there are enough files) or off",
             {.shown_default = "auto",
              .parse =
                  [](absl::string_view flag, const std::string& text) {
                    return Prefixed(absl::StrCat(flag, ": "), ParseAutoShardPolicy(text));
                  }}),
      Option("bucket-mb", "MB", In(&Classifier::bucket_mb),
             "with --distributed: all-reduce the gradients in buckets of this size", {.min = 1}),
  };
}

// --augment defaults to on for the resnets; --augmentation to keras with --images (the only one
// it takes), pad-crop with --data.
absl::Status ResolveAugmentation(const CommandLine& command_line, TrainConfig& config) {
  Classifier& run = config.run;
  if (!command_line.WasGiven("augment")) config.augment = train::models::IsResNet(run.model);
  if (!command_line.WasGiven("augmentation")) {
    run.augmentation = run.image_dir.empty() ? Augmentation::kPadCrop : Augmentation::kKeras;
  }
  if (!run.image_dir.empty() && run.augmentation != Augmentation::kKeras) {
    return absl::InvalidArgumentError("--images augments with --augmentation keras only");
  }
  if (command_line.WasGiven("augmentation") && !config.augment) {
    return absl::InvalidArgumentError("--augmentation needs augmentation on (--augment)");
  }
  if (!config.augment) run.augmentation = Augmentation::kNone;
  return absl::OkStatus();
}

absl::Status CheckCombinations(const CommandLine& command_line, TrainConfig& config) {
  const Classifier& run = config.run;
  if (run.tfrecord_dir.empty() == run.image_dir.empty()) {
    return absl::InvalidArgumentError("give --data DIR or --images DIR (one of them)");
  }
  for (const char* name : {"image-size", "validation-split"}) {
    if (run.image_dir.empty() && command_line.WasGiven(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " applies to --images"));
    }
  }
  if (!run.base_onnx.empty() && command_line.WasGiven("model")) {
    return absl::InvalidArgumentError("--base replaces --model: give one of them");
  }
  for (const char* name : {"freeze-base-epochs", "fine-tune-lr"}) {
    if (run.base_onnx.empty() && command_line.WasGiven(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " applies to --base"));
    }
  }
  if (command_line.WasGiven("fine-tune-lr") && run.freeze_base_epochs == 0) {
    return absl::InvalidArgumentError("--fine-tune-lr applies to --freeze-base-epochs N");
  }
  if (run.freeze_base_epochs > run.epochs) {
    return absl::InvalidArgumentError(absl::StrCat("--freeze-base-epochs ", run.freeze_base_epochs,
                                                   " is more than --epochs ", run.epochs));
  }
  if (command_line.WasGiven("momentum") && run.optimizer.name != "sgd" &&
      run.optimizer.name != "rmsprop") {
    return absl::InvalidArgumentError("--momentum applies to --optimizer sgd and rmsprop only");
  }
  SLUICE_RETURN_IF_ERROR(ResolveAugmentation(command_line, config));
  if (run.recompute && !train::models::IsResNet(run.model)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--recompute applies to --model ",
                     absl::StrJoin(train::models::ResNetNames(), " and "), " only"));
  }
  if (command_line.WasGiven("profile-steps") && run.profile_dir.empty()) {
    return absl::InvalidArgumentError("--profile-steps needs --profile DIR");
  }
  if (run.base_onnx.empty()) {
    const std::vector<std::string> models = train::models::ModelNames();
    if (std::find(models.begin(), models.end(), run.model) == models.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model: unknown model '", run.model, "'; known models: ", absl::StrJoin(models, ", ")));
    }
  }
  // Unknown optimizer and schedule names are command-line errors (exit 2), not run failures.
  SLUICE_RETURN_IF_ERROR(Prefixed("--", train::recipes::CheckOptimizerOptions(run.optimizer)));
  if (run.resume && run.callbacks.checkpoint.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint PATH");
  }
  if (run.resume && run.freeze_base_epochs > 0) {
    // One checkpoint file for two Fits: the head's would resume from fine-tuning's state.
    return absl::InvalidArgumentError(
        "--resume does not follow --freeze-base-epochs' two phases; --backup-dir DIR does (each "
        "phase keeps its backups)");
  }
  if (command_line.WasGiven("checkpoint-every") && run.callbacks.checkpoint.empty() &&
      run.callbacks.backup_dir.empty()) {
    return absl::InvalidArgumentError(
        "--checkpoint-every needs --checkpoint PATH or --backup-dir DIR");
  }
  if (command_line.WasGiven("keep-checkpoints") && run.callbacks.backup_dir.empty()) {
    return absl::InvalidArgumentError("--keep-checkpoints needs --backup-dir DIR");
  }
  for (const char* name : {"collective-timeout", "auto-shard", "bucket-mb"}) {
    if (!config.distributed && command_line.WasGiven(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs --distributed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const OptionTable<TrainConfig>& TrainOptions() {
  static const auto* table = new OptionTable<TrainConfig>(
      {DataAndModelRows(), OptimizerRows(), ComputeRows(), OutputRows(), RunRows()});
  return *table;
}

absl::Status CheckTrainConfig(const CommandLine& command_line, TrainConfig& config) {
  SLUICE_RETURN_IF_ERROR(CheckCombinations(command_line, config));
  config.run.verbose = config.json ? 0 : 1;
  return absl::OkStatus();
}

void WarnOfMoreThreadsThanCores(const TrainConfig& config) {
  if (const int cores = AvailableCores(); config.run.cpu_threads > cores) {
    std::fprintf(stderr,
                 "sluice train: warning: --threads %lld is more than the %d core%s available here; "
                 "the extra threads only take turns\n",
                 static_cast<long long>(config.run.cpu_threads), cores, cores == 1 ? "" : "s");
  }
}

}  // namespace sluice::tools
