#ifndef SLUICE_TRAIN_RECIPES_CALLBACKS_H_
#define SLUICE_TRAIN_RECIPES_CALLBACKS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/callbacks/callback.h"

namespace sluice::train::recipes {

struct CallbackOptions {
  // TensorBoard event files under this folder (TensorBoard, the running metrics every
  // `log_every_steps` steps); empty: none.
  std::string log_dir;
  int64_t log_every_steps = 100;
  // A full checkpoint (ModelCheckpoint: weights, optimizer, input position) at this path after
  // each epoch (or every `checkpoint_every_steps` steps); empty: none.
  std::string checkpoint;
  // Keras' BackupAndRestore in this folder: backups after each epoch (or every
  // `checkpoint_every_steps` steps), the newest `keep_checkpoints` kept, and when the run starts
  // again, a resume from the newest readable one, exact to the step; empty: none.
  std::string backup_dir;
  int64_t checkpoint_every_steps = 0;  // 0: at each epoch's end
  int64_t keep_checkpoints = 2;
  // Whether Fit deletes the backups when it ends (BackupAndRestore's delete_checkpoint). The
  // image-classifier recipe deletes them itself, once the test evaluation and the saved model are
  // written.
  bool delete_backups = true;
  // Stop when val_loss has not improved for this many epochs, restoring the best weights
  // (EarlyStopping); 0: never.
  int64_t early_stopping_patience = 0;
  // Fail Fit at the first step whose loss is NaN or infinite (TerminateOnNaN, Action::kFail),
  // first in the list, so that no backup or checkpoint of that step is written. It reads the loss
  // every step: a wait for the device and, data-parallel, a sum over the ranks.
  bool terminate_on_nan = false;
  // Whether this process writes the TensorBoard files: rank 0 of a data-parallel job. Every rank
  // runs ModelCheckpoint (saving gathers every rank's input position; rank 0 writes).
  bool chief = true;
  // 1: EarlyStopping says when it stops and restores (Keras' verbose=1), on stdout.
  int verbose = 0;
};

// The callbacks `options` asks for, in the order Fit should call them: TerminateOnNaN,
// BackupAndRestore, TensorBoard, ModelCheckpoint, EarlyStopping.
std::vector<std::unique_ptr<callbacks::Callback>> MakeCallbacks(const CallbackOptions& options);

// The BackupAndRestore of `options` (backup_dir not empty): SIGTERM writes a backup and stops.
std::unique_ptr<callbacks::Callback> MakeBackupAndRestore(const CallbackOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_CALLBACKS_H_
