#ifndef SLUICE_TRAIN_FIT_TRAINING_CHECKPOINT_H_
#define SLUICE_TRAIN_FIT_TRAINING_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/element.h"
#include "core/tensor.h"
#include "io/input_stream.h"
#include "train/autodiff/variable.h"
#include "train/optimizers/dynamic_loss_scale.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

// A metric's running sums (train/metrics.h).
struct MetricState {
  std::string name;
  double total = 0;
  double count = 0;
};

// Where one process stands in its training input.
struct RankPosition {
  std::optional<std::string> iterator_state;  // Iterator::Save() of the training pipeline
  std::optional<Element> pending_element;     // read from the pipeline, not yet trained on
  std::vector<MetricState> metrics;           // the epoch's metrics so far
  // Gradient accumulation under way: `accumulated_steps` micro-batches (>= 1) of
  // `accumulation_steps` summed since the last update, and their sums (host tensors) by variable
  // name; a variable without a gradient yet has none. 0: nothing accumulated.
  int64_t accumulated_steps = 0;
  int64_t accumulation_steps = 0;
  std::vector<std::pair<std::string, Tensor>> accumulated_gradients;
};

// Everything a resumed Fit needs to continue exactly where the saved one was. A single process
// keeps its position in the RankPosition fields; data-parallel training keeps every rank's in
// `ranks` instead.
struct TrainingCheckpoint : RankPosition {
  // The model's Variables(), in order, float32.
  std::vector<std::pair<std::string, Tensor>> variables;
  optimizers::OptimizerState optimizer;
  int64_t epoch = 0;          // the epoch in progress (0-based)
  int64_t step_in_epoch = 0;  // steps of that epoch already taken
  int64_t global_step = 0;    // steps taken in all
  std::vector<RankPosition> ranks;
  std::vector<std::string> frozen_variables;  // names of the frozen ones
  bool weights_only = false;  // only `variables` and `frozen_variables` are meaningful
  // Fit's dynamic loss scale, when it scales the loss (nothing in older checkpoints).
  std::optional<optimizers::DynamicLossScale::State> loss_scale;
};

// A rank's position as bytes, for gathering every rank's on the rank that writes the file.
std::string SerializeRankPosition(const RankPosition& position);
absl::StatusOr<RankPosition> ParseRankPosition(absl::string_view bytes, absl::string_view where);

// Writes `checkpoint` to `path` atomically (a temporary file renamed into place): `path` holds
// either the previous checkpoint or the complete new one. The file is a magic string, the
// payload's length and masked CRC-32C, then a serialized TrainingCheckpointProto. The tensors'
// bytes are written from where they are, and a checkpoint may exceed the 2 GiB that protobuf
// parses: ReadCheckpoint does not parse it as one message.
absl::Status WriteCheckpoint(const std::string& path, const TrainingCheckpoint& checkpoint);
// Reads a file WriteCheckpoint wrote, each tensor's bytes straight from the file into the
// tensor: the memory it needs is the tensors' and little more. A truncated or corrupt file is
// DataLoss naming the file, the byte offset and what was expected there.
absl::StatusOr<TrainingCheckpoint> ReadCheckpoint(const std::string& path);
// The same from the `size` bytes of `source`, a checkpoint file's, named `path` in errors.
absl::StatusOr<TrainingCheckpoint> ReadCheckpoint(std::unique_ptr<InputStream> source,
                                                  uint64_t size, const std::string& path);

// FailedPrecondition, saying how to resume, when `checkpoint` holds the input positions of a
// job with another number of ranks than `ranks` (each rank's position is saved).
absl::Status CheckResumingRanks(const std::string& path, const TrainingCheckpoint& checkpoint,
                                size_t ranks);

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_TRAINING_CHECKPOINT_H_
