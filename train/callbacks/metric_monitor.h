#ifndef SLUICE_TRAIN_CALLBACKS_METRIC_MONITOR_H_
#define SLUICE_TRAIN_CALLBACKS_METRIC_MONITOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/callbacks/callback.h"

namespace sluice::train::callbacks {

// Whether a smaller or a larger value of a monitored metric is better. kAuto, as Keras: larger
// when the name contains "acc" (accuracy, top_5_accuracy), smaller otherwise (loss).
enum class MonitorMode { kAuto, kMin, kMax };

// The best value of one metric so far, as ModelCheckpoint, EarlyStopping and ReduceLROnPlateau
// track it: a value improves when it beats the best by more than `min_delta`.
class MetricMonitor {
 public:
  MetricMonitor(std::string monitor, MonitorMode mode, double min_delta = 0);

  // The monitored value in `logs`; InvalidArgument naming the metric and the ones present when
  // it is missing (a misspelled monitor would otherwise silently never act).
  absl::StatusOr<double> Get(const Logs& logs, absl::string_view who) const;
  bool IsImprovement(double value) const;
  bool IsImprovement(double value, double reference) const;
  void set_best(double value) { best_ = value; }
  double best() const { return best_; }
  void Reset();

  const std::string& monitor() const { return monitor_; }
  bool maximize() const { return maximize_; }

 private:
  std::string monitor_;
  bool maximize_;
  double min_delta_;
  double best_;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_METRIC_MONITOR_H_
