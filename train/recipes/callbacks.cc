#include "train/recipes/callbacks.h"

#include "train/callbacks/backup_and_restore.h"
#include "train/callbacks/early_stopping.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/callbacks/tensorboard.h"
#include "train/callbacks/terminate_on_nan.h"

namespace sluice::train::recipes {

std::unique_ptr<callbacks::Callback> MakeBackupAndRestore(const CallbackOptions& options) {
  return std::make_unique<callbacks::BackupAndRestore>(
      callbacks::BackupAndRestoreOptions{.backup_dir = options.backup_dir,
                                         .save_freq = options.checkpoint_every_steps,
                                         .keep = options.keep_checkpoints,
                                         .delete_checkpoint = options.delete_backups,
                                         .save_before_preemption = true});
}

std::vector<std::unique_ptr<callbacks::Callback>> MakeCallbacks(const CallbackOptions& options) {
  std::vector<std::unique_ptr<callbacks::Callback>> made;
  if (options.terminate_on_nan) {
    // Silent: its error says it all.
    made.push_back(std::make_unique<callbacks::TerminateOnNaN>(
        nullptr, callbacks::TerminateOnNaN::Action::kFail));
  }
  // Every rank: a backup is a collective (rank 0 writes every rank's position).
  if (!options.backup_dir.empty()) made.push_back(MakeBackupAndRestore(options));
  if (!options.log_dir.empty() && options.chief) {
    made.push_back(std::make_unique<callbacks::TensorBoard>(callbacks::TensorBoardOptions{
        .log_dir = options.log_dir, .update_freq = options.log_every_steps}));
  }
  if (!options.checkpoint.empty()) {
    made.push_back(std::make_unique<callbacks::ModelCheckpoint>(
        callbacks::ModelCheckpointOptions{.path = options.checkpoint,
                                          .monitor = "loss",
                                          .save_freq = options.checkpoint_every_steps}));
  }
  if (options.early_stopping_patience > 0) {
    made.push_back(std::make_unique<callbacks::EarlyStopping>(
        callbacks::EarlyStoppingOptions{.monitor = "val_loss",
                                        .patience = options.early_stopping_patience,
                                        .restore_best_weights = true,
                                        .verbose = options.chief ? options.verbose : 0}));
  }
  return made;
}

}  // namespace sluice::train::recipes
