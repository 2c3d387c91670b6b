#include "train/fit/compiled_metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/metrics/metric_from_name.h"
#include "train/metrics/sparse_top_k_accuracy.h"

namespace sluice::train::fit {
namespace {

// The specs of `options`: its metrics, or "accuracy" for the default classifier's loss; then
// top_k's.
std::vector<MetricSpec> MetricSpecs(const TrainerOptions& options) {
  std::vector<MetricSpec> specs;
  if (options.metrics) {
    specs = *options.metrics;
  } else if (!options.loss) {
    specs.emplace_back("accuracy");  // the default classifier's, as before compile() existed
  }
  if (options.top_k > 0) {
    const int k = options.top_k;
    specs.emplace_back(absl::StrCat("top_", k, "_accuracy"), [k] {
      return std::make_unique<metrics::SparseTopKAccuracy>(k, absl::StrCat("top_", k, "_accuracy"));
    });
  }
  return specs;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledMetrics>> CompiledMetrics::Create(
    const TrainerOptions& options, const losses::Loss& loss) {
  std::unique_ptr<CompiledMetrics> m(new CompiledMetrics());
  for (const MetricSpec& spec : MetricSpecs(options)) {
    std::unique_ptr<metrics::PredictionMetric> metric;
    if (spec.make) {
      metric = spec.make();
    } else {
      absl::StatusOr<std::unique_ptr<metrics::PredictionMetric>> named =
          metrics::MetricFromName(spec.name, loss.AccuracyMetric());
      SLUICE_RETURN_IF_ERROR(WithContext(named.status(), "Trainer: metrics: "));
      metric = *std::move(named);
    }
    for (const metrics::Metric* other : m->All()) {
      if (other->name() == metric->name()) {
        return absl::InvalidArgumentError(
            absl::StrCat("Trainer: two metrics are named '", metric->name(), "'"));
      }
    }
    m->compiled_.push_back(std::move(metric));
  }
  return m;
}

std::vector<const metrics::Metric*> CompiledMetrics::All() const {
  std::vector<const metrics::Metric*> out = {&loss_};
  for (const auto& m : compiled_) out.push_back(m.get());
  return out;
}

absl::Status CompiledMetrics::Update(const Tensor& batch_loss, const Tensor& y_true,
                                     const Tensor& y_pred) {
  // Weighted by the batch size, as Keras' loss tracker weighs it.
  SLUICE_RETURN_IF_ERROR(loss_.Update(batch_loss, static_cast<double>(y_pred.dim(0))));
  for (auto& m : compiled_) SLUICE_RETURN_IF_ERROR(m->Update(y_true, y_pred));
  return absl::OkStatus();
}

absl::Status CompiledMetrics::PrepareOn(const Device& device) {
  SLUICE_RETURN_IF_ERROR(loss_.PrepareOn(device));
  for (auto& m : compiled_) SLUICE_RETURN_IF_ERROR(m->PrepareOn(device));
  return absl::OkStatus();
}

void CompiledMetrics::Reset() {
  loss_.Reset();
  for (auto& m : compiled_) m->Reset();
}

absl::StatusOr<callbacks::Logs> CompiledMetrics::Logs(Replicas& replicas,
                                                      const std::string& prefix) const {
  callbacks::Logs logs;
  if (!replicas.distributed()) {
    for (const metrics::Metric* metric : All()) {
      SLUICE_ASSIGN_OR_RETURN(logs[prefix + metric->name()], metric->Result());
    }
    return logs;
  }
  // Every metric is total / count: summing both over ranks weighs each rank by its examples.
  std::vector<double> sums;
  for (const metrics::Metric* metric : All()) {
    SLUICE_ASSIGN_OR_RETURN(const double total, metric->total());
    sums.push_back(total);
    sums.push_back(metric->count());
  }
  SLUICE_ASSIGN_OR_RETURN(sums, replicas.Sum(std::move(sums)));
  size_t i = 0;
  for (const metrics::Metric* metric : All()) {
    logs[prefix + metric->name()] = sums[i + 1] > 0 ? sums[i] / sums[i + 1] : 0.0;
    i += 2;
  }
  return logs;
}

absl::StatusOr<std::vector<MetricState>> CompiledMetrics::State() const {
  std::vector<MetricState> state;
  for (const metrics::Metric* m : All()) {
    SLUICE_ASSIGN_OR_RETURN(double total, m->total());
    state.push_back({m->name(), total, m->count()});
  }
  return state;
}

void CompiledMetrics::Restore(const std::vector<MetricState>& state) {
  std::vector<metrics::Metric*> all = {&loss_};
  for (auto& m : compiled_) all.push_back(m.get());
  for (metrics::Metric* m : all) {
    for (const MetricState& s : state) {
      if (s.name == m->name()) m->SetState(s.total, s.count);
    }
  }
}

}  // namespace sluice::train::fit
