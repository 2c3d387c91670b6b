#include "train/recipes/image_classifier.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/os_error.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/termination_signal.h"
#include "train/autodiff/check_numerics.h"
#include "train/backend/backend.h"
#include "train/backend/cpu/cpu_allocator.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/callbacks/backup_and_restore.h"
#include "train/fit/saved_model.h"
#include "train/layers/summary.h"
#include "train/losses/sparse_categorical_crossentropy.h"
#include "train/recipes/folder_images.h"
#include "train/recipes/image_model.h"
#include "train/recipes/skipped_records.h"
#include "train/recipes/tfrecord_images.h"

namespace sluice::train::recipes {
namespace {

// Before any data is read: a missing GPU, a processor without bf16 or an unknown optimizer says
// so at once.
absl::Status CheckBeforeData(const ImageClassifierOptions& options) {
  if (!options.device.is_cpu()) {
    absl::StatusOr<backend::Backend*> backend = backend::BackendFor(options.device);
    if (!backend.ok()) {
      return WithContext(backend.status(),
                         absl::StrCat("device ", options.device.DebugString(), ": "));
    }
  }
  absl::Status supported = backend::CheckPrecisionSupported(options.device, options.precision);
  if (!supported.ok()) {
    return WithContext(supported,
                       absl::StrCat("precision ", backend::PrecisionName(options.precision), ": "));
  }
  if (options.freeze_base_epochs < 0 || options.freeze_base_epochs > options.epochs) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeze_base_epochs ", options.freeze_base_epochs, " is not within the ",
                     options.epochs, " epochs"));
  }
  if (options.freeze_base_epochs > 0 && options.base_onnx.empty()) {
    return absl::InvalidArgumentError("freeze_base_epochs needs a base (base_onnx)");
  }
  if (!(options.fine_tune_learning_rate > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fine_tune_learning_rate ", options.fine_tune_learning_rate));
  }
  return CheckOptimizerOptions(options.optimizer);
}

// History `more` after `history`, its epochs counted on from `offset` (the epochs before it, run
// or restored).
void Append(const fit::History& more, int64_t offset, fit::History& history) {
  for (int64_t epoch : more.epochs) history.epochs.push_back(offset + epoch);
  for (const auto& [key, values] : more.history) {
    std::vector<double>& to = history.history[key];
    to.insert(to.end(), values.begin(), values.end());
  }
}

// What skip_errors skipped, in the training set and in the test set.
struct SkipCounts {
  SkippedRecords train, test;
};

absl::StatusOr<LabeledImages> LoadImages(const ImageClassifierOptions& options, bool chief,
                                         const std::shared_ptr<SkipCounts>& skipped) {
  auto on_skipped = [skipped](const absl::Status& why) { skipped->train.Add(why); };
  auto on_skipped_test = [skipped](const absl::Status& why) { skipped->test.Add(why); };
  if (options.tfrecord_dir.empty() == options.image_dir.empty()) {
    return absl::InvalidArgumentError("give tfrecord_dir or image_dir (one of them)");
  }
  if (options.image_dir.empty()) {
    return TFRecordImages({.dir = options.tfrecord_dir,
                           .batch_size = options.batch_size,
                           .augmentation = options.augmentation,
                           .limit = options.limit,
                           .skip_errors = options.skip_errors,
                           .on_skipped = on_skipped,
                           .on_skipped_test = on_skipped_test,
                           .seed = options.seed});
  }
  return FolderImages({.dir = options.image_dir,
                       .image_size = options.image_size,
                       .validation_split = options.validation_split,
                       .batch_size = options.batch_size,
                       .augmentation = options.augmentation,
                       .limit = options.limit,
                       .skip_errors = options.skip_errors,
                       .on_skipped = on_skipped,
                       .on_skipped_test = on_skipped_test,
                       .seed = options.seed,
                       .verbose = chief && options.verbose > 0});
}

fit::TrainerOptions MakeTrainerOptions(const ImageClassifierOptions& options,
                                       distributed::Communicator* comm) {
  fit::TrainerOptions trainer{.precision = options.precision,
                              .run_eagerly = options.run_eagerly,
                              .communicator = comm,
                              .auto_shard = options.auto_shard,
                              .bucket_bytes = options.bucket_mb << 20};
  if (options.label_smoothing > 0) {
    trainer.loss = std::make_shared<losses::SparseCategoricalCrossentropy>(
        losses::SparseCategoricalCrossentropyOptions{
            .from_logits = true, .label_smoothing = static_cast<float>(options.label_smoothing)});
    trainer.metrics = std::vector<fit::MetricSpec>{"accuracy"};
  }
  return trainer;
}

fit::FitOptions MakeFitOptions(const ImageClassifierOptions& options, int64_t steps_per_epoch,
                               const Dataset& test,
                               const std::vector<std::unique_ptr<callbacks::Callback>>& callbacks) {
  fit::FitOptions fit;
  fit.epochs = options.epochs;
  if (!options.profile_dir.empty()) {
    fit.profile_steps = options.profile_steps;
    fit.profile_dir = options.profile_dir;
  }
  // Known from the record count, so that progress shows a total and an ETA. Skipped records
  // would shorten a pass, so then each epoch is one pass, however long.
  if (!options.skip_errors) fit.steps_per_epoch = steps_per_epoch;
  fit.accumulation_steps = static_cast<int>(options.accumulate);
  fit.seed = options.seed;
  fit.verbose = options.verbose;  // rank 0 only, whatever this says
  if (options.validate || options.callbacks.early_stopping_patience > 0) {
    fit.validation_data = test;
  }
  for (const auto& callback : callbacks) fit.callbacks.push_back(callback.get());
  return fit;
}

// The process's peak resident set so far, in MiB.
double MaxRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;  // Linux counts kibibytes
}

// Images/s over the whole run: each epoch trains on the same number of images, so the rate of
// the run is the harmonic mean of the epochs' rates.
double RunRate(const fit::History& history, const std::string& key) {
  auto it = history.history.find(key);
  if (it == history.history.end() || it->second.empty()) return 0;
  double inverse = 0;
  for (double rate : it->second) inverse += rate > 0 ? 1 / rate : 0;
  return inverse > 0 ? it->second.size() / inverse : 0;
}

double MeanOf(const fit::History& history, const std::string& key) {
  auto it = history.history.find(key);
  if (it == history.history.end() || it->second.empty()) return 0;
  double sum = 0;
  for (double v : it->second) sum += v;
  return sum / it->second.size();
}

// What the run measured once Fit has returned.
void MeasureTraining(double seconds, ImageClassifierResult& result) {
  result.train_seconds = seconds;
  result.images_per_second = RunRate(result.history, "images_per_second");
  result.input_wait_share = MeanOf(result.history, "input_wait_share");
  result.allreduce_exposed_share = MeanOf(result.history, "allreduce_exposed_share");
  result.train_max_rss_mb = MaxRssMb();
  constexpr double kMiB = 1 << 20;
  result.train_peak_tensor_mb = backend::cpu::CpuAllocator::peak_live_bytes() / kMiB;
  result.train_peak_tensor_held_mb = backend::cpu::CpuAllocator::peak_held_bytes() / kMiB;
}

// With a frozen-base phase, each of the two Fits keeps its backups in a subfolder of the backup
// folder of its own: a run started again resumes the head's Fit from the head's backups (which
// restore its end when it had ended) and fine-tuning from fine-tuning's, never one phase from the
// other's.
constexpr char kHeadBackups[] = "head";
constexpr char kFineTuneBackups[] = "fine-tune";

// Whether the run trains the head on the frozen base first (base_onnx makes ImageModel::base).
bool TwoPhases(const ImageClassifierOptions& options) {
  return !options.base_onnx.empty() && options.freeze_base_epochs > 0;
}

// Everything a run sets up before Fit, owned together (the trainer refers to the model and the
// optimizer, Fit's options to the callbacks).
struct Session {
  LabeledImages data;
  ImageModel model;
  std::unique_ptr<optimizers::Optimizer> optimizer;
  std::unique_ptr<fit::Trainer> trainer;
  std::vector<std::unique_ptr<callbacks::Callback>> callbacks;
  // Of two phases: the backups of the head's Fit, in its place in `callbacks` for that Fit
  // (callbacks' own BackupAndRestore, `backup`, is fine-tuning's).
  std::unique_ptr<callbacks::Callback> head_backup;
  callbacks::Callback* backup = nullptr;
  int64_t steps_per_epoch = 0;
};

// The run's backups, once nothing it wrote needs them: the test evaluation and the saved model
// are written (Fit leaves them, so that a kill after training loses nothing).
absl::Status DeleteRunBackups(const ImageClassifierOptions& options) {
  const std::string& dir = options.callbacks.backup_dir;
  if (!TwoPhases(options)) return callbacks::DeleteBackups(dir);
  for (const char* phase : {kHeadBackups, kFineTuneBackups}) {
    const std::filesystem::path sub = std::filesystem::path(dir) / phase;
    SLUICE_RETURN_IF_ERROR(callbacks::DeleteBackups(sub.string()));
    std::error_code not_empty;  // a folder the user put other files in stays
    std::filesystem::remove(sub, not_empty);
  }
  return absl::OkStatus();
}

absl::StatusOr<Session> SetUp(const ImageClassifierOptions& options,
                              distributed::Communicator* comm,
                              const std::shared_ptr<SkipCounts>& skipped) {
  const int ranks = comm != nullptr ? comm->size() : 1;
  const bool chief = comm == nullptr || comm->rank() == 0;
  SLUICE_ASSIGN_OR_RETURN(LabeledImages data, LoadImages(options, chief, skipped));
  absl::StatusOr<ImageModel> made = MakeImageModel({.name = options.model,
                                                    .recompute = options.recompute,
                                                    .seed = options.seed,
                                                    .base_onnx = options.base_onnx},
                                                   data);
  // The model's input shape comes from the first test image: none left after skip_errors is the
  // data's fault, not an empty set's.
  if (absl::IsNotFound(made.status()) &&
      absl::StartsWith(made.status().message(), kNoTestRecords) && skipped->test.count() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "every test image of ", data.test_source, " was unreadable and skipped (",
        skipped->test.count(), "; the first: ", skipped->test.first(), "): no test set is left"));
  }
  SLUICE_RETURN_IF_ERROR(made.status());
  ImageModel model = *std::move(made);
  if (!options.device.is_cpu()) SLUICE_RETURN_IF_ERROR(model.module->To(options.device));
  Session s{.data = std::move(data), .model = std::move(model)};
  // Each rank trains on its shard with batch_size images a step: together, ranks x batch_size.
  const int64_t global_batch = options.batch_size * ranks;
  s.steps_per_epoch = (s.data.train_records + global_batch - 1) / global_batch;
  OptimizerOptions optimizer = options.optimizer;
  optimizer.schedule.total_steps = s.steps_per_epoch * options.epochs / options.accumulate;
  if (optimizer.schedule.total_steps == 0) {
    // Gradients are applied every `accumulate` batches: the run would train nothing.
    return absl::InvalidArgumentError(absl::StrCat(
        "accumulate: ", options.accumulate, " batches make one update, but the run trains ",
        s.steps_per_epoch * options.epochs, " (", options.epochs, " epoch(s) of ",
        s.steps_per_epoch, "): no update would be applied; lower accumulate or train longer"));
  }
  if (chief && optimizer.schedule.warmup_steps > optimizer.schedule.total_steps) {
    std::fprintf(stderr,
                 "warning: the warmup's %lld steps are more than the run's %lld updates: the "
                 "learning rate never reaches its full value\n",
                 static_cast<long long>(optimizer.schedule.warmup_steps),
                 static_cast<long long>(optimizer.schedule.total_steps));
  }
  SLUICE_ASSIGN_OR_RETURN(s.optimizer, MakeOptimizer(optimizer));
  s.trainer = std::make_unique<fit::Trainer>(*s.model.module, *s.optimizer,
                                             MakeTrainerOptions(options, comm));
  CallbackOptions callbacks = options.callbacks;
  callbacks.chief = chief;
  callbacks.verbose = options.verbose;
  callbacks.delete_backups = false;  // DeleteRunBackups, after the evaluation and the save
  if (TwoPhases(options) && !callbacks.backup_dir.empty()) {
    const std::filesystem::path dir(callbacks.backup_dir);
    callbacks.backup_dir = (dir / kHeadBackups).string();
    s.head_backup = MakeBackupAndRestore(callbacks);
    callbacks.backup_dir = (dir / kFineTuneBackups).string();
  }
  s.callbacks = MakeCallbacks(callbacks);
  for (const std::unique_ptr<callbacks::Callback>& made : s.callbacks) {
    if (dynamic_cast<callbacks::BackupAndRestore*>(made.get()) != nullptr) s.backup = made.get();
  }
  return s;
}

// Fails now, not after the training it would have kept, when `dir` cannot become a directory:
// it, or the nearest part of its path that exists, is not a directory, or that part is not
// writable. Creates nothing.
absl::Status CheckCanBeDirectory(const std::string& dir, absl::string_view what) {
  std::error_code error;
  const std::filesystem::path path = std::filesystem::absolute(dir.empty() ? "." : dir, error);
  if (error) return absl::OkStatus();  // the write names the problem
  for (std::filesystem::path at = path;; at = at.parent_path()) {
    const std::filesystem::file_type type = std::filesystem::status(at, error).type();
    if (error && error != std::errc::no_such_file_or_directory &&
        error != std::errc::not_a_directory) {
      return OsError(error.value(), what, " ", dir, ": ", at.string());  // EACCES, ELOOP
    }
    if (type == std::filesystem::file_type::not_found && at != at.parent_path()) continue;
    if (type != std::filesystem::file_type::directory) {
      return WithErrno(absl::FailedPreconditionError(
                           absl::StrCat(what, " ", dir, ": ", at.string(), " is not a directory")),
                       ENOTDIR);
    }
    if (::access(at.c_str(), W_OK | X_OK) != 0) {
      return OsError(errno, what, " ", dir, ": cannot write in ", at.string());
    }
    return absl::OkStatus();
  }
}

// The printing and the global switches between setting up and Fit.
absl::Status BeforeFit(const ImageClassifierOptions& options, bool chief, Session& s) {
  const std::string& checkpoint = options.callbacks.checkpoint;
  const bool talk = chief && options.verbose > 0;
  // Whether a run resumed is worth a line even when quiet (--json): on stderr then.
  std::FILE* notes = talk ? stdout : stderr;
  if (options.resume && !checkpoint.empty() && std::filesystem::exists(checkpoint)) {
    SLUICE_RETURN_IF_ERROR(s.trainer->LoadCheckpoint(checkpoint));
    if (chief) {
      std::fprintf(notes, "resuming from %s (step %lld)\n", checkpoint.c_str(),
                   static_cast<long long>(s.trainer->global_step()));
    }
  } else if (options.resume && !checkpoint.empty() && chief) {
    std::fprintf(notes, "no checkpoint at %s yet: training from the start\n", checkpoint.c_str());
  }
  // With backups, Fit says where it resumes (on stderr), when there is one to resume from.
  if (options.summary && chief) {
    SLUICE_ASSIGN_OR_RETURN(std::string summary,
                            layers::Summary(*s.model.module, s.model.input_shape));
    // Quiet (sluice train --json), stdout is the JSON's alone: the summary goes to stderr.
    std::fprintf(talk ? stdout : stderr, "%s", summary.c_str());
  }
  if (options.check_numerics) autodiff::EnableCheckNumerics();
  return absl::OkStatus();
}

// A loss that turned NaN trains on without a word (TerminateOnNaN is opt-in, as in Keras, for it
// reads the loss every step): the epoch's logged loss says so once it ends.
void WarnOfAnInvalidLoss(const fit::History& history) {
  const auto loss = history.history.find("loss");
  if (loss == history.history.end()) return;
  for (size_t epoch = 0; epoch < loss->second.size(); ++epoch) {
    if (std::isfinite(loss->second[epoch])) continue;
    std::fprintf(stderr,
                 "warning: the training loss was %s in this run's epoch %zu, so the weights are "
                 "likely NaN too: --terminate-on-nan fails at the first such step, and "
                 "--check-numerics names the op that made it\n",
                 std::isnan(loss->second[epoch]) ? "NaN" : "infinite", epoch + 1);
    return;
  }
}

}  // namespace

absl::StatusOr<ImageClassifierResult> TrainImageClassifier(const ImageClassifierOptions& options,
                                                           distributed::Communicator* comm) {
  SLUICE_RETURN_IF_ERROR(CheckBeforeData(options));
  const bool chief = comm == nullptr || comm->rank() == 0;  // prints and writes files
  // Where the results go, before hours of training: a --save over a file failed at the end.
  // Every rank checks, so that none waits in a collective for one that stopped here.
  if (const std::string& checkpoint = options.callbacks.checkpoint; !checkpoint.empty()) {
    std::error_code unknown;  // a path that cannot be checked is left to the write
    if (std::filesystem::is_directory(checkpoint, unknown) || checkpoint.back() == '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", checkpoint, ": a directory; give a file's path"));
    }
    SLUICE_RETURN_IF_ERROR(CheckCanBeDirectory(
        std::filesystem::path(checkpoint).parent_path().string(), "checkpoint"));
  }
  // The folders written during or after training alike: one error for each (a file on the path
  // was PermissionDenied for one, Internal for another), before any data is read.
  for (const auto& [dir, what] : {std::pair{&options.save_dir, "save_dir"},
                                  std::pair{&options.callbacks.backup_dir, "backup_dir"},
                                  std::pair{&options.callbacks.log_dir, "log_dir"},
                                  std::pair{&options.profile_dir, "profile_dir"}}) {
    if (!dir->empty()) SLUICE_RETURN_IF_ERROR(CheckCanBeDirectory(*dir, what));
  }
  backend::cpu::SetCpuThreads(static_cast<int>(options.cpu_threads));
  // Shared with the pipelines' threads, which may outlive this frame's error returns.
  auto skipped = std::make_shared<SkipCounts>();
  SLUICE_ASSIGN_OR_RETURN(Session s, SetUp(options, comm, skipped));
  SLUICE_RETURN_IF_ERROR(BeforeFit(options, chief, s));
  ImageClassifierResult result{.train_records = s.data.train_records,
                               .ranks = comm != nullptr ? comm->size() : 1};
  const auto start = std::chrono::steady_clock::now();
  fit::FitOptions fit = MakeFitOptions(options, s.steps_per_epoch, s.data.test, s.callbacks);
  if (TwoPhases(options)) {
    // Keras' guide: the head first, on the frozen base; then everything, slowly.
    if (chief && options.verbose > 0) {
      std::printf("training the head on the frozen base for %lld epoch(s)\n",
                  static_cast<long long>(options.freeze_base_epochs));
    }
    s.model.base->set_trainable(false);
    fit::FitOptions head = fit;
    head.epochs = options.freeze_base_epochs;
    std::replace(head.callbacks.begin(), head.callbacks.end(), s.backup, s.head_backup.get());
    SLUICE_ASSIGN_OR_RETURN(result.history, s.trainer->Fit(s.data.train, head));
    result.epochs_completed = s.trainer->epoch();
    s.model.base->set_trainable(true);
    fit.epochs = options.epochs - options.freeze_base_epochs;
    if (fit.epochs > 0) {
      s.optimizer->set_learning_rate(static_cast<float>(options.fine_tune_learning_rate));
      if (chief && options.verbose > 0) {
        std::printf("fine-tuning everything at learning rate %g for %lld epoch(s)\n",
                    options.fine_tune_learning_rate, static_cast<long long>(fit.epochs));
      }
      SLUICE_ASSIGN_OR_RETURN(const fit::History tuned, s.trainer->Fit(s.data.train, fit));
      Append(tuned, result.epochs_completed, result.history);
      result.epochs_completed += s.trainer->epoch();
    }
  } else {
    SLUICE_ASSIGN_OR_RETURN(result.history, s.trainer->Fit(s.data.train, fit));
    result.epochs_completed = s.trainer->epoch();
  }
  MeasureTraining(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  result);
  if (chief) WarnOfAnInvalidLoss(result.history);
  // With backups, a SIGTERM (a scheduler's preemption) after training waits for the test
  // evaluation and the save, short next to training: ending the process then would only make the
  // run started again evaluate anew. So does one that came after Fit's last look (in the last
  // backup's write). A second SIGTERM ends it; the backups stay until the end.
  std::unique_ptr<TerminationSignal> sigterm;
  if (!options.callbacks.backup_dir.empty()) {
    // Fails only while another watch lives, and Fit's ended with it: then the default holds.
    absl::StatusOr<std::unique_ptr<TerminationSignal>> installed =
        TerminationSignal::Install(/*keep_received=*/true);
    if (installed.ok()) sigterm = *std::move(installed);
  }
  SLUICE_ASSIGN_OR_RETURN(result.test, s.trainer->Evaluate(s.data.test));
  if (!options.save_dir.empty() && chief) {
    SLUICE_RETURN_IF_ERROR(
        fit::SaveModel(*s.model.module, s.model.input_shape, options.save_dir,
                       {.class_names = s.data.class_names, .optimizer = s.optimizer.get()}));
    if (options.verbose > 0) std::printf("saved the model to %s\n", options.save_dir.c_str());
  }
  if (!options.callbacks.backup_dir.empty() && chief) {
    SLUICE_RETURN_IF_ERROR(DeleteRunBackups(options));
  }
  // Released before the look, so that a SIGTERM from here on ends the process instead of being
  // noted too late to say so.
  if (sigterm != nullptr && sigterm->Release() && chief) {
    std::fprintf(stderr,
                 "SIGTERM arrived at the end of training: the test evaluation%s finished first\n",
                 options.save_dir.empty() ? "" : " and the save");
  }
  result.skipped_train_records = skipped->train.count();
  result.skipped_records = result.skipped_train_records + skipped->test.count();
  result.first_skipped =
      skipped->train.count() > 0 ? skipped->train.first() : skipped->test.first();
  return result;
}

}  // namespace sluice::train::recipes
