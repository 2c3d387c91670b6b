#ifndef SLUICE_TRAIN_CALLBACKS_BACKUP_AND_RESTORE_H_
#define SLUICE_TRAIN_CALLBACKS_BACKUP_AND_RESTORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  // afresh. A run that fails or is killed keeps them.
  bool delete_checkpoint = true;
};

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
  // A backup reads no logs.
  bool NeedsBatchLogs() const override { return false; }

  // The backups in backup_dir, newest (highest step) first.
  absl::StatusOr<std::vector<std::string>> Backups() const;
  int64_t saves() const { return saves_; }

 private:
  absl::Status Save();
  absl::Status CheckOptions() const;

  BackupAndRestoreOptions options_;
  int64_t saves_ = 0;
  int64_t last_saved_step_ = -1;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_BACKUP_AND_RESTORE_H_
