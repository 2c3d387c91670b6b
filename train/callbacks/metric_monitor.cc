#include "train/callbacks/metric_monitor.h"

#include <cmath>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice::train::callbacks {

MetricMonitor::MetricMonitor(std::string monitor, MonitorMode mode, double min_delta)
    : monitor_(std::move(monitor)),
      maximize_(mode == MonitorMode::kMax ||
                (mode == MonitorMode::kAuto && absl::StrContains(monitor_, "acc"))),
      min_delta_(std::abs(min_delta)) {
  Reset();
}

void MetricMonitor::Reset() {
  best_ = maximize_ ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
}

absl::StatusOr<double> MetricMonitor::Get(const Logs& logs, absl::string_view who) const {
  if (std::optional<double> v = LogValue(logs, monitor_)) return *v;
  std::string present;
  for (const auto& [key, value] : logs) absl::StrAppend(&present, present.empty() ? "" : ", ", key);
  return absl::InvalidArgumentError(absl::StrCat(who, ": the monitored metric '", monitor_,
                                                 "' is not in the logs (present: ", present,
                                                 "); validation metrics need validation data"));
}

bool MetricMonitor::IsImprovement(double value) const { return IsImprovement(value, best_); }

bool MetricMonitor::IsImprovement(double value, double reference) const {
  return maximize_ ? value - min_delta_ > reference : value + min_delta_ < reference;
}

}  // namespace sluice::train::callbacks
