// BackupAndRestore (train/callbacks/backup_and_restore.h) with the trainer: backups every N
// steps, the newest k kept, a failed run resumed exactly, and an unreadable newest backup
// falling back to the one before it.
#include "train/callbacks/backup_and_restore.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/status_context.h"
#include "tests/temp_dir.h"
#include "tests/train/fit_test_util.h"
#include "train/autodiff/variable.h"
#include "train/fit/trainer.h"
#include "train/fit/training_checkpoint.h"
#include "train/optimizers/adam.h"

namespace sluice::train::callbacks {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::TinyModel;
using Snapshot = std::vector<std::pair<std::string, Tensor>>;

// Fails Fit after global step `step`, as a crash would end it (the backups stay).
class FailAtStep : public Callback {
 public:
  explicit FailAtStep(int64_t step) : step_(step) {}
  absl::Status OnBatchEnd(int64_t, const Logs&) override {
    if (trainer()->global_step() == step_) return absl::AbortedError("the machine went away");
    return absl::OkStatus();
  }
  bool NeedsBatchLogs() const override { return false; }

 private:
  int64_t step_;
};

// Sends this process SIGTERM after global step `step` (or at the end of epoch `epoch`, where
// validation runs), as a scheduler preempting the job would.
class TerminateAt : public Callback {
 public:
  explicit TerminateAt(int64_t step, int64_t epoch = -1) : step_(step), epoch_(epoch) {}
  absl::Status OnBatchEnd(int64_t, const Logs&) override {
    if (trainer()->global_step() == step_) raise(SIGTERM);
    return absl::OkStatus();
  }
  absl::Status OnEpochEnd(int64_t epoch, const Logs&) override {
    if (epoch == epoch_) raise(SIGTERM);
    return absl::OkStatus();
  }
  bool NeedsBatchLogs() const override { return false; }

 private:
  int64_t step_;
  int64_t epoch_;
};

// Counts the steps one Fit takes: a resumed Fit takes only those after its backup.
class StepCounter : public Callback {
 public:
  absl::Status OnBatchEnd(int64_t, const Logs&) override {
    ++steps_;
    return absl::OkStatus();
  }
  bool NeedsBatchLogs() const override { return false; }
  int64_t steps() const { return steps_; }

 private:
  int64_t steps_ = 0;
};

// Trains TinyModel for 3 epochs of 6 steps with `extra` callbacks; the final variables.
// `unbuilt`: Keras' way instead, layers that learn their input size when Fit builds the model
// from its first batch.
absl::StatusOr<Snapshot> Train(std::vector<Callback*> extra, int accumulation_steps = 1,
                               bool unbuilt = false) {
  std::unique_ptr<layers::Sequential> model = TinyModel(4);
  if (unbuilt) {
    model = std::make_unique<layers::Sequential>(std::initializer_list<layers::LayerEntry>{
        layers::Dense(16, layers::Activation::kRelu, {.seed = 4}),
        layers::Dense(testing::kClasses, layers::Activation::kLinear, {.seed = 104})});
  }
  optimizers::Adam adam(0.01f);
  fit::Trainer trainer(*model, adam);
  absl::StatusOr<fit::History> h = trainer.Fit(BlobsDataset(96, 7, 16).Shuffle(96, {.seed = 2}),
                                               {.epochs = 3,
                                                .callbacks = std::move(extra),
                                                .accumulation_steps = accumulation_steps,
                                                .verbose = 0});
  if (!h.ok()) return h.status();
  return autodiff::SnapshotVariables(model->Variables());
}

void ExpectEqual(const Snapshot& a, const Snapshot& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.Equals(b[i].second)) << a[i].first;
}

TEST(BackupAndRestoreTest, KeepsTheNewestBackupsAndDeletesThemWhenTrainingEnds) {
  ScopedTempDir dir;
  BackupAndRestore kept(
      {.backup_dir = dir.path() + "/b", .save_freq = 4, .keep = 2, .delete_checkpoint = false});
  ASSERT_TRUE(Train({&kept}).ok());
  EXPECT_EQ(kept.saves(), 4);  // steps 4, 8, 12, 16 of 18
  absl::StatusOr<std::vector<std::string>> backups = kept.Backups();
  ASSERT_TRUE(backups.ok()) << backups.status();
  ASSERT_EQ(backups->size(), 2u);
  EXPECT_EQ(std::filesystem::path((*backups)[0]).filename(), "ckpt-000000000016.ckpt");
  EXPECT_EQ(std::filesystem::path((*backups)[1]).filename(), "ckpt-000000000012.ckpt");

  BackupAndRestore deleting({.backup_dir = dir.path() + "/d"});  // after each epoch
  ASSERT_TRUE(Train({&deleting}).ok());
  EXPECT_EQ(deleting.saves(), 3);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/d"));
}

// What a program with more to do after Fit calls once that is written: the backups go, other
// files stay, and a folder with none (or none at all) is no error.
TEST(BackupAndRestoreTest, DeleteBackupsDeletesOnlyTheBackups) {
  ScopedTempDir dir;
  BackupAndRestore kept(
      {.backup_dir = dir.path() + "/b", .save_freq = 4, .delete_checkpoint = false});
  ASSERT_TRUE(Train({&kept}).ok());
  std::ofstream(dir.path() + "/b/notes.txt") << "mine";
  ASSERT_EQ(kept.Backups()->size(), 2u);
  ASSERT_TRUE(DeleteBackups(dir.path() + "/b").ok());
  EXPECT_TRUE(kept.Backups()->empty());
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/b/notes.txt"));
  EXPECT_TRUE(DeleteBackups(dir.path() + "/b").ok());
  EXPECT_TRUE(DeleteBackups(dir.path() + "/missing").ok());
}

TEST(BackupAndRestoreTest, AFailedRunResumesFromItsNewestBackupExactly) {
  absl::StatusOr<Snapshot> straight = Train({});
  ASSERT_TRUE(straight.ok()) << straight.status();
  ScopedTempDir dir;
  BackupAndRestore first({.backup_dir = dir.path(), .save_freq = 5});
  FailAtStep crash(13);
  EXPECT_EQ(Train({&first, &crash}).status().code(), absl::StatusCode::kAborted);
  // Steps 5 and 10 were saved; the run restarts at step 10, mid-epoch, with the input position,
  // optimizer slots and metric sums of then.
  BackupAndRestore second({.backup_dir = dir.path(), .save_freq = 5});
  StepCounter counter;
  absl::StatusOr<Snapshot> resumed = Train({&second, &counter});
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(counter.steps(), 8);  // 11 to 18: not a fresh start, which would also end equal
  ExpectEqual(*straight, *resumed);
}

// A model Fit builds from its first batch: that batch was read before the backup was found, and
// the input pipeline restores (only on a fresh iterator) all the same. Every run failed here.
TEST(BackupAndRestoreTest, AModelBuiltByFitResumesExactly) {
  absl::StatusOr<Snapshot> straight = Train({}, 1, /*unbuilt=*/true);
  ASSERT_TRUE(straight.ok()) << straight.status();
  ScopedTempDir dir;
  BackupAndRestore first({.backup_dir = dir.path(), .save_freq = 5});
  FailAtStep crash(13);
  EXPECT_EQ(Train({&first, &crash}, 1, true).status().code(), absl::StatusCode::kAborted);
  BackupAndRestore second({.backup_dir = dir.path(), .save_freq = 5});
  StepCounter counter;
  absl::StatusOr<Snapshot> resumed = Train({&second, &counter}, 1, true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(counter.steps(), 8);
  ExpectEqual(*straight, *resumed);
}

// save_before_preemption: a SIGTERM mid-epoch (between the every-5-steps backups) gives a backup
// of the step in progress and a Preempted error, not the death of the process; the next run
// resumes there and ends as a run never interrupted.
TEST(BackupAndRestoreTest, ASigtermWritesABackupOfTheStepAndTheRunResumesThere) {
  absl::StatusOr<Snapshot> straight = Train({});
  ASSERT_TRUE(straight.ok()) << straight.status();
  ScopedTempDir dir;
  BackupAndRestore first(
      {.backup_dir = dir.path(), .save_freq = 5, .save_before_preemption = true});
  TerminateAt preempt(8);  // before `first` in the list: noticed after the same step
  const absl::Status stopped = Train({&preempt, &first}).status();
  EXPECT_EQ(stopped.code(), absl::StatusCode::kCancelled) << stopped;
  EXPECT_TRUE(IsPreemption(stopped)) << stopped;
  EXPECT_TRUE(IsPreemption(WithContext(stopped, "sluice train: ")));
  EXPECT_FALSE(IsPreemption(absl::CancelledError("preempted")));
  EXPECT_NE(stopped.message().find("ckpt-000000000008.ckpt"), absl::string_view::npos) << stopped;
  absl::StatusOr<std::vector<std::string>> backups = first.Backups();
  ASSERT_TRUE(backups.ok()) << backups.status();
  ASSERT_EQ(backups->size(), 2u);  // steps 8 and 5
  EXPECT_EQ(std::filesystem::path((*backups)[0]).filename(), "ckpt-000000000008.ckpt");

  // The handler is gone with the Fit: SIGTERM has its default disposition again.
  struct sigaction now;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);

  BackupAndRestore second(
      {.backup_dir = dir.path(), .save_freq = 5, .save_before_preemption = true});
  StepCounter counter;
  absl::StatusOr<Snapshot> resumed = Train({&second, &counter});
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(counter.steps(), 10);  // 9 to 18
  ExpectEqual(*straight, *resumed);
}

// Gradient accumulation over 4 micro-batches, epochs of 6 steps: each epoch's backup falls in the
// middle of an accumulation (2 of 4 summed at step 6). The backup keeps the partial sums (it
// failed with "cannot checkpoint" before, ending Fit at the first epoch's end), and the run
// resumed from it applies the same means at the same steps.
TEST(BackupAndRestoreTest, BackupsInTheMiddleOfAGradientAccumulationResumeExactly) {
  absl::StatusOr<Snapshot> straight = Train({}, /*accumulation_steps=*/4);
  ASSERT_TRUE(straight.ok()) << straight.status();
  ScopedTempDir dir;
  BackupAndRestore first({.backup_dir = dir.path()});
  FailAtStep crash(9);
  EXPECT_EQ(Train({&first, &crash}, 4).status().code(), absl::StatusCode::kAborted);
  absl::StatusOr<std::vector<std::string>> backups = first.Backups();
  ASSERT_TRUE(backups.ok() && backups->size() == 1u);
  absl::StatusOr<fit::TrainingCheckpoint> saved = fit::ReadCheckpoint((*backups)[0]);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->global_step, 6);
  EXPECT_EQ(saved->accumulated_steps, 2);
  EXPECT_EQ(saved->accumulation_steps, 4);
  EXPECT_EQ(saved->accumulated_gradients.size(), 4u);  // two kernels, two biases

  // Without accumulation, or over another count, the sums cannot be continued.
  for (const int other : {1, 3}) {
    BackupAndRestore refused({.backup_dir = dir.path()});
    EXPECT_EQ(Train({&refused}, other).status().code(), absl::StatusCode::kFailedPrecondition);
  }

  BackupAndRestore second({.backup_dir = dir.path()});
  StepCounter counter;
  absl::StatusOr<Snapshot> resumed = Train({&second, &counter}, 4);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(counter.steps(), 12);  // 7 to 18
  ExpectEqual(*straight, *resumed);
}

// A Fit that fails for another reason lets go of SIGTERM too (OnTrainAborted): it was absorbed
// for as long as the callback lived, and the same callback's next Fit failed with "SIGTERM is
// already watched".
TEST(BackupAndRestoreTest, AFailedFitReleasesTheSigtermHandler) {
  ScopedTempDir dir;
  BackupAndRestore backup(
      {.backup_dir = dir.path(), .save_freq = 5, .save_before_preemption = true});
  FailAtStep crash(3);
  EXPECT_EQ(Train({&backup, &crash}).status().code(), absl::StatusCode::kAborted);
  struct sigaction now;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  StepCounter counter;
  absl::StatusOr<Snapshot> again = Train({&backup, &counter});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(counter.steps(), 18);  // no backup before step 5: a fresh start
}

// A SIGTERM after a Fit's last look (in its last backup's write, say: between the head phase and
// fine-tuning of a transfer-learning run) preempts the next Fit at its first step: that Fit's
// watch started by clearing it, and the preemption was lost. Once acted on, it is gone: the Fit
// after that trains to its end.
TEST(BackupAndRestoreTest, ASigtermAfterAFitsLastLookPreemptsTheNextFitOnce) {
  struct TerminateAtTrainEnd : Callback {
    absl::Status OnTrainEnd(const Logs&) override {
      raise(SIGTERM);
      return absl::OkStatus();
    }
  } late;
  ScopedTempDir dir;
  BackupAndRestore first({.backup_dir = dir.path(), .save_before_preemption = true});
  ASSERT_TRUE(Train({&late, &first}).ok());  // before `first` lets go of SIGTERM
  BackupAndRestore second({.backup_dir = dir.path(), .save_before_preemption = true});
  StepCounter counted;
  const absl::Status stopped = Train({&counted, &second}).status();
  EXPECT_TRUE(IsPreemption(stopped)) << stopped;
  EXPECT_EQ(counted.steps(), 1);
  BackupAndRestore third({.backup_dir = dir.path(), .save_before_preemption = true});
  StepCounter rest;
  ASSERT_TRUE(Train({&third, &rest}).ok());
  EXPECT_EQ(rest.steps(), 17);  // from step 1's backup to the end
}

// A SIGTERM at an epoch's end (during its validation, say) stops Fit there with the epoch's
// backup, and the next run starts with the next epoch.
TEST(BackupAndRestoreTest, ASigtermAtAnEpochEndStopsWithThatEpochsBackup) {
  absl::StatusOr<Snapshot> straight = Train({});
  ASSERT_TRUE(straight.ok()) << straight.status();
  ScopedTempDir dir;
  BackupAndRestore first({.backup_dir = dir.path(), .save_before_preemption = true});
  TerminateAt preempt(/*step=*/-1, /*epoch=*/0);
  const absl::Status stopped = Train({&preempt, &first}).status();
  EXPECT_TRUE(IsPreemption(stopped)) << stopped;
  EXPECT_NE(stopped.message().find("ckpt-000000000006.ckpt"), absl::string_view::npos) << stopped;
  BackupAndRestore second({.backup_dir = dir.path(), .save_before_preemption = true});
  StepCounter counter;
  ::testing::internal::CaptureStderr();
  absl::StatusOr<Snapshot> resumed = Train({&second, &counter});
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(counter.steps(), 12);  // epochs 2 and 3
  ExpectEqual(*straight, *resumed);
  // Fit says where it resumed: the file, the epoch it goes on with, the step.
  EXPECT_NE(said.find("Fit: resuming from " + dir.path() + "/ckpt-000000000006.ckpt" +
                      " (global step 6, at the start of epoch 2)"),
            std::string::npos)
      << said;
}

TEST(BackupAndRestoreTest, AnUnreadableNewestBackupFallsBackToTheOneBeforeWithAWarning) {
  absl::StatusOr<Snapshot> straight = Train({});
  ASSERT_TRUE(straight.ok()) << straight.status();
  ScopedTempDir dir;
  BackupAndRestore first({.backup_dir = dir.path(), .save_freq = 5});
  FailAtStep crash(16);
  EXPECT_FALSE(Train({&first, &crash}).ok());
  absl::StatusOr<std::vector<std::string>> backups = first.Backups();
  ASSERT_TRUE(backups.ok() && backups->size() == 2u);  // steps 15 and 10
  // Torn: the newest loses its second half.
  const std::string newest = (*backups)[0];
  std::filesystem::resize_file(newest, std::filesystem::file_size(newest) / 2);

  BackupAndRestore second({.backup_dir = dir.path(), .save_freq = 5});
  StepCounter counter;
  ::testing::internal::CaptureStderr();
  absl::StatusOr<Snapshot> resumed = Train({&second, &counter});
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(counter.steps(), 8);  // from step 10's backup
  ExpectEqual(*straight, *resumed);
  EXPECT_NE(warnings.find(newest + " cannot be read; resuming from " + (*backups)[1]),
            std::string::npos)
      << warnings;
}

TEST(BackupAndRestoreTest, NoReadableBackupIsAnErrorNamingTheLastOneTried) {
  ScopedTempDir dir;
  std::ofstream(dir.path() + "/ckpt-000000000003.ckpt") << "not a checkpoint";
  BackupAndRestore backup({.backup_dir = dir.path()});
  ::testing::internal::CaptureStderr();
  absl::StatusOr<Snapshot> run = Train({&backup});
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(run.status().message().find("no checkpoint to resume from can be read: " + dir.path() +
                                        "/ckpt-000000000003.ckpt"),
            std::string::npos)
      << run.status();
}

TEST(BackupAndRestoreTest, BadOptionsAreRefused) {
  for (BackupAndRestoreOptions options :
       {BackupAndRestoreOptions{}, BackupAndRestoreOptions{.backup_dir = "x", .keep = 0},
        BackupAndRestoreOptions{.backup_dir = "x", .save_freq = -1}}) {
    BackupAndRestore backup(options);
    EXPECT_EQ(Train({&backup}).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace sluice::train::callbacks
