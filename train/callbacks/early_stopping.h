#ifndef SLUICE_TRAIN_CALLBACKS_EARLY_STOPPING_H_
#define SLUICE_TRAIN_CALLBACKS_EARLY_STOPPING_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "train/callbacks/callback.h"
#include "train/callbacks/metric_monitor.h"

namespace sluice::train::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  // An improvement must beat the best value by more than this.
  double min_delta = 0;
  // Epochs with no improvement after which training stops.
  int64_t patience = 0;
  MonitorMode mode = MonitorMode::kAuto;
  // At the end of training, set the model's variables to those of the best epoch.
  bool restore_best_weights = false;
  // 1: say on stdout when it stops training and when it restores the best weights, as Keras'
  // verbose=1 does ("Epoch 5: early stopping"); 0: silent.
  int verbose = 0;
};

// keras.callbacks.EarlyStopping (Keras 3): stops Fit once `monitor` has not improved for
// `patience` epochs; with restore_best_weights, the model ends with the best epoch's variables
// (all Variables(), BatchNorm's moving statistics included).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);

  absl::Status OnTrainBegin(const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnTrainEnd(const Logs& logs) override;
  bool NeedsBatchLogs() const override { return false; }
  bool MayNeedBatchLogs() const override { return false; }

  // The epoch Fit stopped after (-1: it was not stopped) and the best one.
  int64_t stopped_epoch() const { return stopped_epoch_; }
  int64_t best_epoch() const { return best_epoch_; }
  double best() const { return monitor_.best(); }

 private:
  EarlyStoppingOptions options_;
  MetricMonitor monitor_;
  int64_t wait_ = 0;
  int64_t stopped_epoch_ = -1;
  int64_t best_epoch_ = -1;
  std::vector<std::pair<std::string, Tensor>> best_weights_;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_EARLY_STOPPING_H_
