#ifndef SLUICE_TRAIN_LAYERS_SUMMARY_H_
#define SLUICE_TRAIN_LAYERS_SUMMARY_H_

#include <string>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras' model.summary() as text: one row per layer of `model` (its Children(), or the model
// itself when it has none) with its name, output shape (from a Sequential's last call; "?"
// before any, "None" for the batch) and parameter count, then the total, trainable and
// non-trainable counts. Frozen weights and moving statistics count as non-trainable; counters
// kept on the host (Dropout's call count) are state, not parameters, and are not counted.
// A layer not built yet shows "unbuilt" and 0.
std::string Summary(Module& model);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_SUMMARY_H_
