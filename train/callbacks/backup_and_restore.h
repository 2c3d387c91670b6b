#ifndef SLUICE_TRAIN_CALLBACKS_BACKUP_AND_RESTORE_H_
#define SLUICE_TRAIN_CALLBACKS_BACKUP_AND_RESTORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/termination_signal.h"
#include "train/callbacks/callback.h"

namespace sluice::train::callbacks {

struct BackupAndRestoreOptions {
  // The folder of the backups (created when missing): ckpt-<global step>.ckpt files. Required.
  // Data-parallel: a folder every rank sees (a shared file system).
  std::string backup_dir;
  // 0: a backup at the end of each epoch (Keras' save_freq="epoch"); N: every N global steps,
  // so that a preempted run loses fewer than N steps.
  int64_t save_freq = 0;
  // The newest backups kept; older ones are deleted once a newer one is written (>= 1).
  int64_t keep = 2;
  // Delete the backups when Fit ends normally (Keras' delete_checkpoint): the next run starts
  // afresh. A run that fails or is killed keeps them. A program with more to do after Fit (an
  // evaluation, a saved model) sets it false and calls DeleteBackups once that is written, so
  // that a kill in between loses nothing.
  bool delete_checkpoint = true;
  // Keras' save_before_preemption: while Fit runs, a SIGTERM (what Kubernetes, Slurm and a spot
  // VM's shutdown send before they kill a job) is noted, and after the step in progress a backup
  // is written and Fit returns a Preempted() error (IsPreemption), so that no step is lost in
  // the grace period. A second SIGTERM ends the process as before. Data-parallel: every rank
  // must set it the same; the ranks agree whether any was signalled with the agreement before
  // each step, stop together, skip the epoch's validation and write the backup of that step.
  // One Fit with it at a time per process.
  bool save_before_preemption = false;
};

// The error a Fit stopped by save_before_preemption returns (Cancelled, naming the backup).
absl::Status Preempted(const std::string& backup, int64_t global_step);
// Whether `status` (or an error that wraps it with WithContext) is Preempted's.
bool IsPreemption(const absl::Status& status);

// Deletes the backups (ckpt-<step>.ckpt files) in `backup_dir`, as delete_checkpoint does when Fit
// ends; other files are left. A missing folder has none.
absl::Status DeleteBackups(const std::string& backup_dir);

// keras.callbacks.BackupAndRestore: full training checkpoints (Trainer::SaveCheckpoint: weights,
// optimizer, metrics, the input pipeline's position) at epoch ends or every `save_freq` steps,
// and, when Fit starts again after a crash or a preemption, a resume from the newest one, exact
// to the step. Each backup is written atomically (a crash leaves the previous ones whole); an
// unreadable newest backup (a torn or corrupt file) falls back to the one before it, and Fit
// warns naming both.
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(BackupAndRestoreOptions options);

  // Backups(): Fit resumes from the newest readable one.
  absl::StatusOr<std::vector<std::string>> CheckpointsToResume() override;
  absl::Status OnTrainBegin(const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnBatchEnd(int64_t batch, const Logs& logs) override;
  absl::Status OnTrainEnd(const Logs& logs) override;
  void OnTrainAborted(const absl::Status& error) override;
  // A backup reads no logs.
  bool NeedsBatchLogs() const override { return false; }
  bool MayNeedBatchLogs() const override { return false; }

  // The backups in backup_dir, newest (highest step) first.
  absl::StatusOr<std::vector<std::string>> Backups() const;
  int64_t saves() const { return saves_; }

 private:
  // The path of the backup of the current step.
  std::string BackupPath() const;
  absl::Status Save();
  // With save_before_preemption, after a SIGTERM on any rank: a backup, then Preempted().
  // Data-parallel, after a step, only the request to stop (TrainingLoop::StopForPreemption); the
  // backup at the epoch's end.
  absl::Status StopIfPreempted(bool epoch_end);
  absl::Status CheckOptions() const;

  BackupAndRestoreOptions options_;
  int64_t saves_ = 0;
  int64_t last_saved_step_ = -1;
  std::unique_ptr<TerminationSignal> termination_;  // while Fit runs, with save_before_preemption
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_BACKUP_AND_RESTORE_H_
