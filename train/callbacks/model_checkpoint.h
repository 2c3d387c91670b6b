#ifndef SLUICE_TRAIN_CALLBACKS_MODEL_CHECKPOINT_H_
#define SLUICE_TRAIN_CALLBACKS_MODEL_CHECKPOINT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "train/callbacks/callback.h"
#include "train/callbacks/metric_monitor.h"

namespace sluice::train::callbacks {

struct ModelCheckpointOptions {
  // Where to save, formatted as Keras formats it (FormatCheckpointPath): "{epoch}" or
  // "{epoch:02d}" is the 1-based epoch, "{val_loss:.3f}" a value of the logs.
  std::string path;
  std::string monitor = "val_loss";
  // Save only when `monitor` improves on the best value so far.
  bool save_best_only = false;
  MonitorMode mode = MonitorMode::kAuto;
  // 0: at the end of each epoch; N: every N steps (with the running metrics as logs).
  int64_t save_freq = 0;
  // Keras' save_weights_only: write only the model's variables (Trainer::SaveWeights), not the
  // optimizer, the input position and the pipeline's buffers, so a save costs about the model's
  // size. Such a file restores the weights (LoadCheckpoint) but cannot resume a run exactly.
  bool save_weights_only = false;
};

// keras.callbacks.ModelCheckpoint: saves a full training checkpoint (Trainer::SaveCheckpoint:
// variables, optimizer, position, pipeline) so that a run can resume from it, or only the
// weights. The file's folder is created when missing, as Keras does.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options);

  absl::Status OnTrainBegin(const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnBatchEnd(int64_t batch, const Logs& logs) override;
  // Only at the steps it saves (its monitor and file name read the logs).
  bool NeedsBatchLogs() const override;
  bool MayNeedBatchLogs() const override;

  int64_t saves() const { return saves_; }
  const std::string& last_path() const { return last_path_; }
  double best() const { return monitor_.best(); }

 private:
  // `batch` (0-based within the epoch) when saving after a step: the path's "{batch}".
  absl::Status MaybeSave(int64_t epoch, const Logs& logs,
                         std::optional<int64_t> batch = std::nullopt);

  ModelCheckpointOptions options_;
  MetricMonitor monitor_;
  int64_t saves_ = 0;
  std::string last_path_;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_MODEL_CHECKPOINT_H_
