#ifndef SLUICE_TRAIN_LAYERS_SUMMARY_H_
#define SLUICE_TRAIN_LAYERS_SUMMARY_H_

#include <string>

#include "absl/status/statusor.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras' model.summary() as text: one row per layer of `model` (its Children(), or the model
// itself when it has none) with its name, output shape (from a Sequential's last call; "?"
// before any, "None" for the batch) and parameter count, then the total, trainable and
// non-trainable counts. Frozen weights and moving statistics count as non-trainable; counters
// kept on the host (Dropout's call count) are state, not parameters, and are not counted.
// A layer not built yet shows "unbuilt" and 0.
std::string Summary(Module& model);
// The same after building `model` for `input_shape` (batch dimension included) and calling it
// once on zeros of that shape (batch 1, training = false, on the model's device), so that every
// output shape is known, as Keras' summary() of a built model.
absl::StatusOr<std::string> Summary(Module& model, const Shape& input_shape);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_SUMMARY_H_
