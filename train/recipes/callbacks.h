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
  // each epoch; empty: none.
  std::string checkpoint;
  // Stop when val_loss has not improved for this many epochs, restoring the best weights
  // (EarlyStopping); 0: never.
  int64_t early_stopping_patience = 0;
  // Whether this process writes the TensorBoard files: rank 0 of a data-parallel job. Every rank
  // runs ModelCheckpoint (saving gathers every rank's input position; rank 0 writes).
  bool chief = true;
};

// The callbacks `options` asks for, in the order Fit should call them: TensorBoard,
// ModelCheckpoint, EarlyStopping.
std::vector<std::unique_ptr<callbacks::Callback>> MakeCallbacks(const CallbackOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_CALLBACKS_H_
