#ifndef SLUICE_TRAIN_FIT_SAVED_MODEL_H_
#define SLUICE_TRAIN_FIT_SAVED_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/shape.h"
#include "train/layers/module.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

// Keras' model.save(dir): a model that loads without the code that built it.
//   DIR/model.pb      the architecture: each layer's config (Module::GetConfig), the input
//                     shape, a format name and version, and a CRC of the config;
//   DIR/weights.ckpt  the variables and which are frozen: a weights-only training checkpoint
//                     (Trainer::SaveWeights' file, which Trainer::LoadCheckpoint also reads).
// Each file is written to a temporary file and renamed into place. `input_shape` is what the
// model takes (batch dimension included, any value): LoadModel builds the model for it. The
// model must be built. Every built-in layer has a config; a user's own layer overrides
// GetConfig and calls RegisterLayer. Variables are read through the backend, so a model on any
// device saves.
struct SaveModelOptions {
  // The name of each output class, in order (a classifier's labels, for `sluice predict`).
  std::vector<std::string> class_names;
  // Keras' include_optimizer: when set, the optimizer's state (iterations, base learning rate,
  // slots such as Adam's m and v, for the model's TrainableVariables()) is saved beside the
  // weights, so that training can go on where it stopped (LoadedModel::optimizer_state).
  const optimizers::Optimizer* optimizer = nullptr;
};
absl::Status SaveModel(layers::Module& model, const Shape& input_shape, const std::string& dir,
                       const SaveModelOptions& options = {});

struct LoadedModel {
  std::unique_ptr<layers::Module> model;  // built, on the CPU (Module::To moves it)
  Shape input_shape;
  std::vector<std::string> class_names;  // as saved (empty when none were given)
  // The optimizer's state when one was saved: an optimizer of the same kind takes it with
  // optimizer.RestoreState(*optimizer_state, model->TrainableVariables()), which names what does
  // not fit (a slot another kind of optimizer does not have, a shape).
  std::optional<optimizers::OptimizerState> optimizer_state;
};

// What LoadModel accepts from a model.pb before it reads the weights or makes anything.
struct LoadModelOptions {
  // Variable elements in all, as the architecture's config gives them (16 GiB of float32).
  int64_t max_parameters = int64_t{1} << 32;
  // Elements of the input and of each layer's output for one example: LoadModel builds the model
  // by running it once on zeros of that size (1 GiB of float32).
  int64_t max_activation_elements = int64_t{1} << 28;
};

// Keras' keras.models.load_model(dir). A missing directory or file is NotFound; a file that is
// not a sluice saved model, of another version, or corrupt is DataLoss naming the file and what
// was wrong; a layer class with no registered factory is NotFound naming it.
//
// Before it reads the weights or makes a layer, LoadModel sizes the architecture from its config
// alone (layers::LayerSizeFromConfig): an architecture over a limit of `options` is
// ResourceExhausted naming it. Then a layer whose variables, by its config, do not hold as many
// elements as the weights file holds for it is DataLoss naming both files, the layer and both
// counts; so is a weights file with elements no layer takes. Weights of the right sizes that do
// not fit otherwise are InvalidArgument naming the variable. A user's layer registered without a
// size function is checked when it is built instead (ReserveParameters).
absl::StatusOr<LoadedModel> LoadModel(const std::string& dir, const LoadModelOptions& options = {});

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_SAVED_MODEL_H_
