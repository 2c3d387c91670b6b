#ifndef SLUICE_TRAIN_CALLBACKS_TRAINING_LOOP_H_
#define SLUICE_TRAIN_CALLBACKS_TRAINING_LOOP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/layers/module.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::callbacks {

// What a callback sees of the loop that calls it (fit::Trainer is one). An interface, so that
// callbacks build below fit/ and the trainer can hold them without a dependency cycle.
class TrainingLoop {
 public:
  virtual ~TrainingLoop() = default;

  virtual layers::Module& model() = 0;
  virtual optimizers::Optimizer& optimizer() = 0;
  // Steps taken in all, and the epoch in progress (0-based).
  virtual int64_t global_step() const = 0;
  virtual int64_t epoch() const = 0;
  // Ends training after the current step (Keras' model.stop_training = True).
  virtual void StopTraining() = 0;
  virtual bool stop_training() const = 0;
  // Writes the whole training state to `path` (see fit::Trainer::SaveCheckpoint).
  virtual absl::Status SaveCheckpoint(const std::string& path) = 0;
  // Writes only the model's variables (see fit::Trainer::SaveWeights).
  virtual absl::Status SaveWeights(const std::string& path) = 0;
  // Whether `flag` is true on any of the processes training together: data-parallel, a
  // collective every rank calls after the same step; in one process, `flag`.
  virtual absl::StatusOr<bool> AnyReplica(bool flag) { return flag; }
  // The processes training together (data-parallel ranks); 1 in one process.
  virtual int replicas() const { return 1; }
  // Data-parallel: asks every rank to stop before the next step, for a preemption noticed after
  // this one. The ranks agree on it with the agreement each step already makes (no collective of
  // its own), skip the epoch's validation, and reach OnEpochEnd together, where preempting() is
  // true on every rank; a request in an epoch's last step is agreed on before its validation.
  // Callbacks that judge an epoch by its metrics (EarlyStopping, ReduceLROnPlateau, ModelCheckpoint
  // per epoch) skip a preempted one. In one process, as StopTraining.
  virtual void StopForPreemption() { StopTraining(); }
  virtual bool preempting() const { return false; }
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_TRAINING_LOOP_H_
