// MetricMonitor (train/callback_monitor.h): modes, min_delta, missing metrics.
#include "train/callbacks/metric_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sluice::train::callbacks {
namespace {

using ::testing::HasSubstr;

TEST(MetricMonitorTest, AutoModeMaximizesAccuracyAndMinimizesLoss) {
  EXPECT_TRUE(MetricMonitor("val_accuracy", MonitorMode::kAuto).maximize());
  EXPECT_TRUE(MetricMonitor("top_5_accuracy", MonitorMode::kAuto).maximize());
  EXPECT_FALSE(MetricMonitor("val_loss", MonitorMode::kAuto).maximize());
  EXPECT_TRUE(MetricMonitor("val_loss", MonitorMode::kMax).maximize());
  EXPECT_FALSE(MetricMonitor("accuracy", MonitorMode::kMin).maximize());
}

TEST(MetricMonitorTest, ImprovementMustBeatBestByMinDelta) {
  MetricMonitor loss("loss", MonitorMode::kAuto, 0.1);
  EXPECT_TRUE(loss.IsImprovement(100.0));  // anything beats +inf
  loss.set_best(1.0);
  EXPECT_FALSE(loss.IsImprovement(0.95));
  EXPECT_TRUE(loss.IsImprovement(0.85));
  MetricMonitor acc("accuracy", MonitorMode::kAuto, -0.1);  // the sign of min_delta is ignored
  acc.set_best(0.5);
  EXPECT_FALSE(acc.IsImprovement(0.55));
  EXPECT_TRUE(acc.IsImprovement(0.65));
  acc.Reset();
  EXPECT_TRUE(acc.IsImprovement(-1e300));
}

TEST(MetricMonitorTest, MissingMetricListsThePresentOnes) {
  MetricMonitor m("val_loss", MonitorMode::kAuto);
  EXPECT_EQ(*m.Get({{"val_loss", 0.25}}, "X"), 0.25);
  absl::StatusOr<double> v = m.Get({{"loss", 1}, {"accuracy", 0.5}}, "EarlyStopping");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("EarlyStopping: the monitored metric 'val_loss' is not in the logs "
                        "(present: accuracy, loss)"));
}

}  // namespace
}  // namespace sluice::train::callbacks
