#ifndef SLUICE_TRAIN_CALLBACKS_REDUCE_LR_ON_PLATEAU_H_
#define SLUICE_TRAIN_CALLBACKS_REDUCE_LR_ON_PLATEAU_H_

#include <cstdint>
#include <string>

#include "train/callbacks/callback.h"
#include "train/callbacks/metric_monitor.h"

namespace sluice::train::callbacks {

// Keras' defaults.
struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // new rate = rate * factor
  int64_t patience = 10;
  MonitorMode mode = MonitorMode::kAuto;
  double min_delta = 1e-4;
  int64_t cooldown = 0;  // epochs to wait after a reduction before counting again
  double min_lr = 0;
};

// keras.callbacks.ReduceLROnPlateau: multiplies the optimizer's base learning rate by `factor`
// (never below min_lr) once `monitor` has not improved for `patience` epochs. With a schedule,
// the base scales the whole schedule (Optimizer::set_learning_rate).
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options);

  absl::Status OnTrainBegin(const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  bool NeedsBatchLogs() const override { return false; }
  bool MayNeedBatchLogs() const override { return false; }

  int64_t reductions() const { return reductions_; }

 private:
  ReduceLROnPlateauOptions options_;
  MetricMonitor monitor_;
  int64_t wait_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t reductions_ = 0;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_REDUCE_LR_ON_PLATEAU_H_
