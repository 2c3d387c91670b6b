#include "train/fit/trainer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/monotonic_clock.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "profiler/profiler.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/transfer.h"
#include "train/callbacks/progress_bar.h"
#include "train/data/prefetch_to_device.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/reduce.h"

namespace sluice::train::fit {
namespace {

// `status` with `context` in front of its message, keeping its code.
absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, status.message()));
}

absl::Status CheckBatch(absl::string_view who, const Element& e, size_t first, bool need_labels) {
  if (e.size() < first + (need_labels ? 2 : 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": elements must be {inputs float32 [B, ...], targets [B, ...]}",
                     need_labels ? "" : " or {inputs}", ", got ", ElementDebugString(e, 2)));
  }
  const Tensor& images = e[first];
  if (images.dtype() != DType::kFloat32 || images.rank() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": inputs must be float32 [B, ...], got ",
                                                   DTypeName(images.dtype()),
                                                   images.shape().DebugString()));
  }
  return absl::OkStatus();
}

// Fit reads train.Enumerate().Repeat(): Enumerate tags each batch with its index in the pass, so
// that Fit sees where a pass of unknown length ends (index 0 again) while Repeat keeps one
// iterator, and its position, across epochs. This names the parts of such an element.
// Fit checks an element's images and labels (CheckBatch) before it makes an EnumeratedBatch.
struct EnumeratedBatch {
  // Enumerate makes the index, but a restored checkpoint may hold anything in the pipeline's
  // buffers (their elements are not checked against the pipeline's types): Fit checks each
  // element it reads with this first.
  static absl::Status Check(const Element& e) {
    if (e.empty() || e[0].dtype() != DType::kInt64 || e[0].rank() != 0) {
      return absl::DataLossError(absl::StrCat(
          "an element without its pass index (int64 scalar) first: ", ElementDebugString(e, 2),
          "; was the input's position restored from a corrupt checkpoint?"));
    }
    return absl::OkStatus();
  }
  static int64_t IndexOf(const Element& e) { return e[0].scalar<int64_t>(); }
  explicit EnumeratedBatch(const Element& e) : index(IndexOf(e)), images(e[1]), labels(e[2]) {}
  int64_t index;  // within the pass
  const Tensor& images;
  const Tensor& labels;
};

absl::Status CheckFitOptions(const FitOptions& options) {
  if (options.epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: epochs must be >= 0, got ", options.epochs));
  }
  if (options.steps_per_epoch && *options.steps_per_epoch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: steps_per_epoch must be >= 1, got ", *options.steps_per_epoch));
  }
  if (options.profile_steps && (options.profile_steps->first < 1 ||
                                options.profile_steps->second < options.profile_steps->first ||
                                options.profile_dir.empty())) {
    return absl::InvalidArgumentError(
        "Fit: profile_steps must be {from, to} with 1 <= from <= to (global steps, 1-based) and "
        "a profile_dir");
  }
  if (options.accumulation_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: accumulation_steps must be >= 1, got ", options.accumulation_steps));
  }
  return absl::OkStatus();
}

}  // namespace

// The loss tracker and the compiled metrics of one Fit (or one Evaluate), as Keras' compile()
// makes them.
struct Trainer::Metrics {
  std::vector<metrics::Metric*> All() {
    std::vector<metrics::Metric*> out = {&loss};
    for (auto& m : compiled) out.push_back(m.get());
    return out;
  }
  std::vector<const metrics::Metric*> All() const {
    std::vector<const metrics::Metric*> out = {&loss};
    for (const auto& m : compiled) out.push_back(m.get());
    return out;
  }
  void Reset() {
    for (metrics::Metric* m : All()) m->Reset();
  }
  // `loss`: the batch's reduced loss (with its regularisation), a float32 scalar on the device,
  // weighted by the batch size as Keras' loss tracker weighs it.
  absl::Status Update(const Tensor& batch_loss, const Tensor& y_true, const Tensor& y_pred) {
    SLUICE_RETURN_IF_ERROR(loss.Update(batch_loss, static_cast<double>(y_pred.dim(0))));
    for (auto& m : compiled) SLUICE_RETURN_IF_ERROR(m->Update(y_true, y_pred));
    return absl::OkStatus();
  }

  metrics::Mean loss{"loss"};
  std::vector<std::unique_ptr<metrics::PredictionMetric>> compiled;
};

absl::StatusOr<std::unique_ptr<Trainer::Metrics>> Trainer::MakeMetrics() const {
  auto m = std::make_unique<Metrics>();
  std::vector<MetricSpec> specs;
  if (options_.metrics) {
    specs = *options_.metrics;
  } else if (!options_.loss) {
    specs.emplace_back("accuracy");  // the default classifier's, as before compile() existed
  }
  if (options_.top_k > 0) {
    const int k = options_.top_k;
    specs.emplace_back(absl::StrCat("top_", k, "_accuracy"), [k] {
      return std::make_unique<metrics::SparseTopKAccuracy>(k, absl::StrCat("top_", k, "_accuracy"));
    });
  }
  for (const MetricSpec& spec : specs) {
    std::unique_ptr<metrics::PredictionMetric> metric;
    if (spec.make) {
      metric = spec.make();
    } else {
      absl::StatusOr<std::unique_ptr<metrics::PredictionMetric>> named =
          metrics::MetricFromName(spec.name, loss_->AccuracyMetric());
      SLUICE_RETURN_IF_ERROR(WithContext(named.status(), "Trainer: metrics: "));
      metric = *std::move(named);
    }
    for (const metrics::Metric* other : m->All()) {
      if (other->name() == metric->name()) {
        return absl::InvalidArgumentError(
            absl::StrCat("Trainer: two metrics are named '", metric->name(), "'"));
      }
    }
    m->compiled.push_back(std::move(metric));
  }
  return m;
}

Trainer::Trainer(layers::Module& model, optimizers::Optimizer& optimizer, TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      options_(options),
      loss_(options.loss ? options.loss
                         : std::make_shared<losses::SparseCategoricalCrossentropy>(
                               losses::SparseCategoricalCrossentropyOptions{.from_logits = true})) {
  if (options.communicator != nullptr && options.communicator->size() > 1) {
    dp_.emplace(*options.communicator, options.bucket_bytes);
  }
}

Trainer::~Trainer() = default;

absl::StatusOr<callbacks::Logs> Trainer::MetricLogs(const Metrics& m, const std::string& prefix) {
  callbacks::Logs logs;
  if (!dp_) {
    for (const metrics::Metric* metric : m.All()) {
      SLUICE_ASSIGN_OR_RETURN(logs[prefix + metric->name()], metric->Result());
    }
    return logs;
  }
  // Every metric is total / count: summing both over ranks weighs each rank by its examples.
  std::vector<double> sums;
  for (const metrics::Metric* metric : m.All()) {
    SLUICE_ASSIGN_OR_RETURN(const double total, metric->total());
    sums.push_back(total);
    sums.push_back(metric->count());
  }
  SLUICE_ASSIGN_OR_RETURN(sums, dp_->Sum(std::move(sums)));
  size_t i = 0;
  for (const metrics::Metric* metric : m.All()) {
    logs[prefix + metric->name()] = sums[i + 1] > 0 ? sums[i] / sums[i + 1] : 0.0;
    i += 2;
  }
  return logs;
}

absl::StatusOr<Dataset> Trainer::ShardForRank(const Dataset& data, absl::string_view who,
                                              const FitOptions* options) {
  if (!dp_) return data;
  absl::StatusOr<ShardedDataset> sharded =
      AutoShard(data, dp_->size(), dp_->rank(), options_.auto_shard);
  if (!sharded.ok()) return WithContext(sharded.status(), absl::StrCat(who, ": "));
  if (options != nullptr && options->verbose > 0 && dp_->rank() == 0) {
    std::FILE* out = options->progress_stream != nullptr ? options->progress_stream : stdout;
    std::fprintf(out, "%s: data-parallel over %d ranks; rank 0's input is sharded %s\n",
                 std::string(who).c_str(), dp_->size(), sharded->description.c_str());
  }
  return sharded->dataset;
}

absl::StatusOr<int64_t> Trainer::AgreedCardinality(int64_t cardinality) {
  if (!dp_) return cardinality;
  std::vector<int64_t> v = {cardinality, -cardinality};  // min, and max as -min(-x)
  SLUICE_RETURN_IF_ERROR(
      dp_->comm().AllReduceValues(absl::MakeSpan(v), distributed::ReduceOp::kMin));
  const int64_t lo = v[0], hi = -v[1];
  if (lo >= 0) return lo;
  return lo == hi ? lo : kUnknownCardinality;
}

absl::Status Trainer::SkipToNextPass() {
  // pending_, when set, is this rank's next element: the next pass's first (kept), or one of
  // this pass's that the epoch ended before (skipped, with the rest of the pass).
  while (true) {
    if (pending_ && EnumeratedBatch::IndexOf(*pending_) == 0) return absl::OkStatus();
    pending_.reset();
    absl::StatusOr<std::optional<Element>> next = iterator_->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Fit: reading the training data: "));
    if (!next->has_value()) return absl::OkStatus();
    SLUICE_RETURN_IF_ERROR(
        WithContext(EnumeratedBatch::Check(**next), "Fit: reading the training data: "));
    pending_ = std::move(*next);
  }
}

absl::StatusOr<Element> Trainer::ToModelDevice(const Element& batch, size_t first) const {
  if (device_.is_cpu()) return batch;
  return backend::ElementToDevice(batch, device_, first);
}

absl::Status Trainer::UseModelDevice(absl::string_view who) {
  device_ = model_.device();
  return WithContext(backend::CheckPrecisionSupported(device_, options_.precision),
                     absl::StrCat(who, ": "));
}

Dataset Trainer::OnModelDevice(const Dataset& data) const {
  if (device_.is_cpu() || options_.device_prefetch <= 0) return data;
  return data::PrefetchToDevice(data, device_, options_.device_prefetch);
}

absl::Status Trainer::StartLossScaling(const FitOptions& options) {
  std::optional<optimizers::DynamicLossScaleOptions> wanted = options_.loss_scale;
  if (!wanted && options_.precision == backend::Precision::kMixedFloat16) wanted.emplace();
  if (!wanted) return absl::OkStatus();
  if (options_.train_step) {
    return absl::InvalidArgumentError(
        "loss scaling (mixed_float16) with a custom train_step is not supported: the step "
        "computes its own loss; scale it there, or leave loss_scale unset");
  }
  if (options.accumulation_steps > 1) {
    return absl::InvalidArgumentError(
        "loss scaling (mixed_float16) with gradient accumulation is not supported: an overflow "
        "in one micro-batch would have to drop the whole accumulated step");
  }
  if (!loss_scale_) {
    SLUICE_ASSIGN_OR_RETURN(loss_scale_, optimizers::DynamicLossScale::Create(*wanted));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Trainer::ScaleLoss(const Tensor& loss) {
  // The loss scale, and 1 / ranks when data-parallel: the ranks' gradients then only need
  // summing, which spares the all-reduce a pass over every gradient.
  float scale = loss_scale_ ? loss_scale_->scale() : 1.0f;
  if (ReducesEveryStep()) scale /= static_cast<float>(dp_->size());
  // The factor on the loss's device, copied there again only when it changes.
  if (!loss_scale_tensor_ || !(loss_scale_tensor_->device() == loss.device()) ||
      loss_scale_tensor_value_ != scale) {
    SLUICE_ASSIGN_OR_RETURN(loss_scale_tensor_,
                            backend::CopyTo(Tensor::Scalar<float>(scale), loss.device()));
    loss_scale_tensor_value_ = scale;
  }
  return ops::Mul(loss, *loss_scale_tensor_);
}

absl::StatusOr<std::optional<Element>> Trainer::NextTrainingElement() {
  if (pending_) {
    std::optional<Element> e = std::move(pending_);
    pending_.reset();
    return e;
  }
  absl::StatusOr<std::optional<Element>> next = iterator_->GetNext();
  if (next.ok() && next->has_value()) {
    SLUICE_RETURN_IF_ERROR(EnumeratedBatch::Check(**next));
  }
  return next;
}

absl::Status Trainer::CheckLoss(absl::string_view who) const {
  if (loss_->reduction() == losses::Reduction::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": the loss '", loss_->name(),
                     "' has reduction none (per-example values); training needs a scalar: use "
                     "kSumOverBatchSize (the default) or kSum"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Trainer::CompiledLoss(const Tensor& y_true, const Tensor& y_pred,
                                             ops::LabelRangeCheck& label_check) {
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, (*loss_)(y_true, y_pred, &label_check));
  SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> penalty, RegularizationLoss());
  if (penalty) {
    SLUICE_ASSIGN_OR_RETURN(loss, ops::Add(loss, *penalty));
  }
  return loss;
}

absl::Status Trainer::ApplyGradients(std::vector<std::optional<Tensor>> grads,
                                     const std::vector<autodiff::Variable*>& vars) {
  if (ReducesEveryStep()) {
    SLUICE_RETURN_IF_ERROR(dp_->FinishStep(grads));
  } else if (dp_ && !accumulator_) {
    // A custom step's gradients: averaged here, after its backward pass.
    SLUICE_RETURN_IF_ERROR(dp_->AllReduceMean(vars, grads));
  }
  if (loss_scale_) {
    // An overflowing step changes no variable (Keras' LossScaleOptimizer skips it).
    SLUICE_ASSIGN_OR_RETURN(const bool finite, loss_scale_->UnscaleAndUpdate(grads));
    if (!finite) return absl::OkStatus();
  }
  if (!accumulator_) return optimizer_.Apply(grads, vars);
  SLUICE_RETURN_IF_ERROR(accumulator_->Add(grads));
  ++accumulated_;
  if (accumulator_->ready()) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> mean, accumulator_->Average());
    // Data-parallel: only the accumulated mean crosses the network.
    if (dp_) SLUICE_RETURN_IF_ERROR(dp_->AllReduceMean(vars, mean));
    SLUICE_RETURN_IF_ERROR(optimizer_.Apply(mean, vars));
    accumulated_ = 0;
  }
  return absl::OkStatus();
}

absl::Status Trainer::TrainStep(const Tensor& x, const Tensor& y,
                                ops::LabelRangeCheck& label_check) {
  autodiff::SetNumericsStep(global_step_ + 1);  // names the step in check-numerics errors
  if (options_.train_step) {
    TrainStepContext context(*this, x, y, label_check);
    absl::Status status = options_.train_step(context);
    MarkPhase("train_step");
    return status;
  }
  const std::vector<autodiff::Variable*> vars = model_.TrainableVariables();
  std::vector<std::optional<Tensor>> grads;
  Tensor y_pred;
  Tensor loss;
  {
    autodiff::Tape tape;
    {
      backend::ScopedPrecision precision(options_.precision);
      SLUICE_ASSIGN_OR_RETURN(y_pred, model_.Forward(x, /*training=*/true));
    }
    MarkPhase("forward");
    SLUICE_ASSIGN_OR_RETURN(loss, CompiledLoss(y, y_pred, label_check));
    Tensor scaled = loss;
    if (loss_scale_ || ReducesEveryStep()) {
      SLUICE_ASSIGN_OR_RETURN(scaled, ScaleLoss(loss));
    }
    MarkPhase("loss");
    if (ReducesEveryStep()) {
      // Each bucket's all-reduce starts while the backward pass goes on.
      dp_->BeginStep(vars, distributed::ReduceOp::kSum);  // the loss is divided by the ranks
      SLUICE_ASSIGN_OR_RETURN(grads,
                              tape.Gradient(scaled, vars, std::nullopt, dp_->OnGradientReady()));
    } else {
      SLUICE_ASSIGN_OR_RETURN(grads, tape.Gradient(scaled, vars));
    }
  }
  MarkPhase("backward");
  SLUICE_RETURN_IF_ERROR(ApplyGradients(std::move(grads), vars));
  MarkPhase("optimizer");
  absl::Status status = train_metrics_->Update(loss, y, y_pred);
  MarkPhase("metrics");
  return status;
}

int64_t Trainer::BeginPhases() {
  phase_mark_ns_ = profiler::Active() ? profiler::NowNs() : 0;
  return phase_mark_ns_;
}

void Trainer::MarkPhase(const char* phase) {
  if (phase_mark_ns_ == 0 || !profiler::Active()) return;
  const int64_t now = profiler::NowNs();
  profiler::RecordSpan("phase", phase, phase_mark_ns_, now);
  phase_mark_ns_ = now;
}

void Trainer::EndPhases(int64_t step_start) {
  if (step_start == 0 || !profiler::Active()) return;
  profiler::RecordSpan("step", "step", step_start, phase_mark_ns_);
  phase_mark_ns_ = 0;
}

absl::Status Trainer::MaybeStartProfile(const FitOptions& options) {
  if (!options.profile_steps || profiling_ || global_step_ + 1 != options.profile_steps->first) {
    return absl::OkStatus();
  }
  std::string dir = options.profile_dir;
  if (dp_) absl::StrAppend(&dir, "/rank", dp_->rank());  // each rank profiles itself
  SLUICE_RETURN_IF_ERROR(WithContext(profiler::Start(dir), "Fit: profile_steps: "));
  profiling_ = true;
  return absl::OkStatus();
}

absl::Status Trainer::MaybeStopProfile(const FitOptions& options, bool fit_ends) {
  if (!profiling_ || (!fit_ends && global_step_ < options.profile_steps->second)) {
    return absl::OkStatus();
  }
  profiling_ = false;
  absl::StatusOr<profiler::Report> report = profiler::Stop();
  SLUICE_RETURN_IF_ERROR(WithContext(report.status(), "Fit: profile_steps: "));
  if (options.verbose > 0 && (!dp_ || dp_->rank() == 0)) {
    std::FILE* out = options.progress_stream != nullptr ? options.progress_stream : stdout;
    std::fprintf(out, "%s(trace: %s; TensorBoard: %s)\n", report->summary.c_str(),
                 report->trace_path.c_str(), report->tensorboard_path.c_str());
  }
  return absl::OkStatus();
}

layers::Module& TrainStepContext::model() { return trainer_.model_; }
optimizers::Optimizer& TrainStepContext::optimizer() { return trainer_.optimizer_; }
const losses::Loss& TrainStepContext::loss() const { return *trainer_.loss_; }

absl::StatusOr<Tensor> TrainStepContext::ComputeLoss(const Tensor& y_pred) {
  return trainer_.CompiledLoss(y_, y_pred, label_check_);
}

absl::Status TrainStepContext::ApplyGradients(const std::vector<std::optional<Tensor>>& grads,
                                              const std::vector<autodiff::Variable*>& vars) {
  if (grads.size() != vars.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ApplyGradients: ", grads.size(),
                                                   " gradients for ", vars.size(), " variables"));
  }
  return trainer_.ApplyGradients(grads, vars);
}

absl::Status TrainStepContext::UpdateMetrics(const Tensor& loss, const Tensor& y_pred) {
  return trainer_.train_metrics_->Update(loss, y_, y_pred);
}

absl::Status Trainer::RunEpoch(const FitOptions& options, std::optional<int64_t> steps_in_epoch,
                               callbacks::ProgressBar* progress, EpochResult& result) {
  double wait_seconds = 0;
  double compute_seconds = 0;
  const int64_t first_step = step_in_epoch_;
  const double start = MonotonicSeconds();
  if (dp_) dp_->ResetOverlap();
  auto wait_share = [&] {
    const double total = wait_seconds + compute_seconds;
    return total > 0 ? wait_seconds / total : 0.0;
  };
  bool interrupted = false;
  bool peer_ended = false;  // data-parallel: another rank's pass ended first
  // Data-parallel: whether any rank has something that may read a step's logs (a live progress
  // bar, a callback). Where none has, no rank ever reads them, and the steps skip agreeing on it:
  // one small all-reduce a step less (for mlp, a step is about a millisecond).
  bool logs_may_be_read = true;
  if (dp_) {
    const bool mine =
        (progress != nullptr && progress->interactive()) || !options.callbacks.empty();
    absl::StatusOr<std::vector<double>> any = dp_->Sum({mine ? 1.0 : 0.0});
    if (!any.ok()) return WithContext(any.status(), "Fit: ");
    logs_may_be_read = (*any)[0] > 0;
  }
  while (!steps_in_epoch || step_in_epoch_ < *steps_in_epoch) {
    SLUICE_RETURN_IF_ERROR(MaybeStartProfile(options));
    const int64_t step_start = BeginPhases();
    const double t0 = MonotonicSeconds();
    absl::StatusOr<std::optional<Element>> next = NextTrainingElement();
    const double t1 = MonotonicSeconds();
    MarkPhase("input");
    wait_seconds += t1 - t0;
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Fit: reading the training data: "));
    // The first element of the next pass starts the next epoch.
    const bool next_pass = next->has_value() && EnumeratedBatch::IndexOf(**next) == 0 &&
                           step_in_epoch_ > 0 && !options.steps_per_epoch;
    const std::string where =
        absl::StrCat("Fit: epoch ", epoch_ + 1, ", step ", step_in_epoch_ + 1, ": ");
    if (dp_) {
      // Every rank takes this step, or none does; all stop if any rank's callbacks asked to.
      absl::StatusOr<std::vector<double>> agreed =
          dp_->Sum({next->has_value() && !next_pass ? 1.0 : 0.0, stop_training_ ? 1.0 : 0.0});
      if (!agreed.ok()) return WithContext(agreed.status(), where);
      if ((*agreed)[1] > 0 || (*agreed)[0] < dp_->size()) {
        if (next->has_value()) pending_ = std::move(*next);  // not trained on: kept
        if ((*agreed)[1] > 0) {
          stop_training_ = true;
          interrupted = true;  // a resumed run finishes the epoch
          break;
        }
        if (step_in_epoch_ == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "Fit: ", dp_->size() - static_cast<int>((*agreed)[0]), " of ", dp_->size(),
              " ranks' training data yielded no element in epoch ", epoch_ + 1,
              ": too few files or elements to shard over ", dp_->size(), " ranks?"));
        }
        peer_ended = !next_pass;
        break;
      }
    }
    if (!next->has_value()) {
      if (step_in_epoch_ == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Fit: the training dataset yielded no element in epoch ", epoch_ + 1));
      }
      break;
    }
    if (next_pass) {
      pending_ = std::move(*next);
      break;
    }
    SLUICE_RETURN_IF_ERROR(CheckBatch("Fit", **next, 1, /*need_labels=*/true));
    SLUICE_ASSIGN_OR_RETURN(Element on_device, ToModelDevice(**next, 1));
    const EnumeratedBatch batch(on_device);
    ops::LabelRangeCheck label_check;
    MarkPhase("prepare");
    SLUICE_RETURN_IF_ERROR(WithContext(TrainStep(batch.images, batch.labels, label_check), where));
    label_checks_.Add(where, std::move(label_check));
    result.images += batch.images.dim(0);
    ++step_in_epoch_;
    ++global_step_;

    // Reading the metrics waits for the device: only for steps whose logs someone reads. The
    // labels' checks come with them, and at least every kMaxDeferredLabelChecks steps.
    bool read_logs = progress != nullptr && progress->WantsUpdate();
    for (callbacks::Callback* cb : options.callbacks) read_logs = read_logs || cb->NeedsBatchLogs();
    if (dp_ && logs_may_be_read) {
      // Reading them sums them over the ranks: all read if any rank's callbacks want them.
      absl::StatusOr<std::vector<double>> wanted = dp_->Sum({read_logs ? 1.0 : 0.0});
      if (!wanted.ok()) return WithContext(wanted.status(), where);
      read_logs = (*wanted)[0] > 0;
    }
    callbacks::Logs logs;
    if (read_logs || label_checks_.size() >= kMaxDeferredLabelChecks) {
      SLUICE_RETURN_IF_ERROR(label_checks_.CheckAll());
    }
    if (read_logs) {
      SLUICE_ASSIGN_OR_RETURN(logs, MetricLogs(*train_metrics_));
    }
    compute_seconds += MonotonicSeconds() - t1;
    MarkPhase("logs");

    logs["learning_rate"] = optimizer_.learning_rate();
    logs["input_wait_share"] = wait_share();
    if (loss_scale_) logs["loss_scale"] = loss_scale_->scale();
    for (callbacks::Callback* cb : options.callbacks) {
      SLUICE_RETURN_IF_ERROR(cb->OnBatchEnd(step_in_epoch_ - 1, logs));
    }
    if (progress != nullptr && read_logs) {
      // Data-parallel: the job's images, as every rank takes batches of the same size.
      progress->Update(step_in_epoch_ - first_step, result.images * (dp_ ? dp_->size() : 1), logs);
    }
    MarkPhase("callbacks");
    EndPhases(step_start);
    SLUICE_RETURN_IF_ERROR(MaybeStopProfile(options, /*fit_ends=*/false));
    // Data-parallel ranks stop together, at the next step's agreement.
    if (stop_training_ && !dp_) {
      interrupted = !steps_in_epoch || step_in_epoch_ < *steps_in_epoch;
      break;
    }
  }
  if (dp_ && !interrupted && !options.steps_per_epoch && peer_ended) {
    SLUICE_RETURN_IF_ERROR(SkipToNextPass());
  }
  if (!interrupted && !options.steps_per_epoch) pass_length_ = step_in_epoch_;
  result.completed = !interrupted;
  result.steps = step_in_epoch_ - first_step;
  SLUICE_RETURN_IF_ERROR(label_checks_.CheckAll());
  SLUICE_ASSIGN_OR_RETURN(result.logs, MetricLogs(*train_metrics_));
  result.logs["input_wait_share"] = wait_share();
  if (loss_scale_) result.logs["loss_scale"] = loss_scale_->scale();
  const double seconds = MonotonicSeconds() - start;
  double images = static_cast<double>(result.images);
  if (dp_) {
    // The job's rate: every rank's images over this rank's time; and how much of the
    // gradients' all-reduce time the step waited for (the rest ran behind the backward pass).
    SLUICE_ASSIGN_OR_RETURN(std::vector<double> sums,
                            dp_->Sum({images, dp_->exposed_seconds(), dp_->allreduce_seconds()}));
    images = sums[0];
    result.logs["allreduce_seconds"] = sums[2] / dp_->size();
    result.logs["allreduce_exposed_share"] = sums[2] > 0 ? std::min(1.0, sums[1] / sums[2]) : 0.0;
  }
  result.logs["images_per_second"] = seconds > 0 ? images / seconds : 0.0;
  return absl::OkStatus();
}

absl::Status Trainer::StartFit(const Dataset& train, const FitOptions& options) {
  // The pass's index stays on the host: Enumerate comes after the copies to the device.
  Dataset pipeline = OnModelDevice(train).Enumerate().Repeat();  // see EnumeratedBatch
  if (options.seed) pipeline = pipeline.WithOptions(Options{.seed = *options.seed});
  in_fit_ = true;
  stop_training_ = false;
  iterator_ = pipeline.MakeIterator();
  pending_.reset();
  epoch_ = 0;
  step_in_epoch_ = 0;
  accumulated_ = 0;
  label_checks_.Clear();
  accumulator_.reset();
  if (options.accumulation_steps > 1) accumulator_.emplace(options.accumulation_steps);
  SLUICE_RETURN_IF_ERROR(CheckLoss("Fit"));
  if (!train_metrics_) {
    SLUICE_ASSIGN_OR_RETURN(train_metrics_, MakeMetrics());
  }
  train_metrics_->Reset();
  if (!model_.built()) {
    // Keras builds a model on its first batch: read it now (it is trained on first) so that
    // the variables exist before the optimizer, the first step and the ranks' sync see them.
    absl::StatusOr<std::optional<Element>> first = iterator_->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(first.status(), "Fit: reading the data: "));
    if (first->has_value()) {
      SLUICE_RETURN_IF_ERROR(CheckBatch("Fit", **first, 1, /*need_labels=*/true));
      SLUICE_RETURN_IF_ERROR(BuildModel((**first)[1].shape(), "Fit"));
    }
    pending_ = *std::move(first);
  }
  if (dp_) return WithContext(dp_->SyncModel(model_), "Fit: ");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Tensor>> Trainer::RegularizationLoss() {
  std::vector<Tensor> penalties;
  SLUICE_RETURN_IF_ERROR(model_.AddLosses(penalties));
  if (penalties.empty()) return std::nullopt;
  Tensor total = penalties[0];
  for (size_t i = 1; i < penalties.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(total, ops::Add(total, penalties[i]));
  }
  return total;
}

absl::Status Trainer::BuildModel(const Shape& input_shape, absl::string_view who) {
  if (model_.built()) return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(WithContext(model_.Build(input_shape), absl::StrCat(who, ": ")));
  SLUICE_RETURN_IF_ERROR(
      autodiff::CheckUniqueNames(model_.Variables(), absl::StrCat(who, ": the model")));
  return model_.To(device_);
}

absl::Status Trainer::ResumeFromCheckpoint() {
  TrainingCheckpoint ckpt = *std::move(resume_);
  resume_.reset();
  epoch_ = ckpt.epoch;
  step_in_epoch_ = ckpt.step_in_epoch;
  global_step_ = ckpt.global_step;
  if (ckpt.iterator_state) {
    SLUICE_RETURN_IF_ERROR(
        WithContext(iterator_->Restore(*ckpt.iterator_state),
                    absl::StrCat(resume_path_, ": the input pipeline's position: ")));
  }
  if (ckpt.pending_element) {
    SLUICE_RETURN_IF_ERROR(
        WithContext(EnumeratedBatch::Check(*ckpt.pending_element),
                    absl::StrCat(resume_path_, ": the element held for the next step: ")));
  }
  pending_ = std::move(ckpt.pending_element);
  if (step_in_epoch_ > 0) {
    for (metrics::Metric* m : train_metrics_->All()) {
      for (const MetricState& s : ckpt.metrics) {
        if (s.name == m->name()) m->SetState(s.total, s.count);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<callbacks::Logs> Trainer::FitEpoch(const FitOptions& options,
                                                  std::optional<int64_t> steps_in_epoch) {
  const int64_t epoch = epoch_;
  if (step_in_epoch_ == 0) train_metrics_->Reset();
  for (callbacks::Callback* cb : options.callbacks) {
    SLUICE_RETURN_IF_ERROR(cb->OnEpochBegin(epoch, {}));
  }
  std::optional<callbacks::ProgressBar> progress;
  if (options.verbose > 0 && (!dp_ || dp_->rank() == 0)) {
    callbacks::ProgressBarOptions bar_options{.stream = options.progress_stream};
    if (options.verbose == 2) bar_options.interactive = false;
    progress.emplace(absl::StrCat("Epoch ", epoch + 1, "/", options.epochs),
                     steps_in_epoch.value_or(pass_length_), std::move(bar_options));
  }
  EpochResult result;
  SLUICE_RETURN_IF_ERROR(
      RunEpoch(options, steps_in_epoch, progress ? &*progress : nullptr, result));
  callbacks::Logs logs = std::move(result.logs);
  if (options.validation_data) {
    SLUICE_ASSIGN_OR_RETURN(callbacks::Logs val, Evaluate(*options.validation_data));
    for (const auto& [key, value] : val) logs["val_" + key] = value;
  }
  logs["learning_rate"] = optimizer_.learning_rate();
  // A complete epoch moves the position on, so that a checkpoint a callback saves now resumes
  // at the next epoch; an epoch cut short by StopTraining stays, and a resumed run finishes it.
  if (result.completed) {
    ++epoch_;
    step_in_epoch_ = 0;
  }
  if (progress) progress->Finish(result.steps, result.images * (dp_ ? dp_->size() : 1), logs);
  for (callbacks::Callback* cb : options.callbacks) {
    SLUICE_RETURN_IF_ERROR(cb->OnEpochEnd(epoch, logs));
  }
  return logs;
}

absl::StatusOr<History> Trainer::Fit(const Dataset& train, FitOptions options) {
  if (in_fit_) {
    return absl::FailedPreconditionError("Fit: already running (called from a callback?)");
  }
  SLUICE_RETURN_IF_ERROR(CheckFitOptions(options));
  SLUICE_RETURN_IF_ERROR(UseModelDevice("Fit"));
  SLUICE_RETURN_IF_ERROR(WithContext(StartLossScaling(options), "Fit: "));
  SLUICE_ASSIGN_OR_RETURN(const Dataset shard, ShardForRank(train, "Fit", &options));
  absl::Cleanup end_fit = [this] {
    iterator_.reset();
    pending_.reset();
    in_fit_ = false;
    if (profiling_) {
      // Fit failed while profiling: the profile is dropped, so that a later Start works.
      profiling_ = false;
      profiler::Stop().IgnoreError();
    }
  };
  SLUICE_RETURN_IF_ERROR(StartFit(shard, options));
  if (resume_) SLUICE_RETURN_IF_ERROR(ResumeFromCheckpoint());
  SLUICE_ASSIGN_OR_RETURN(const int64_t cardinality, AgreedCardinality(shard.Cardinality()));
  pass_length_ = cardinality >= 0 ? cardinality : -1;
  std::optional<int64_t> steps_in_epoch = options.steps_per_epoch;
  // Data-parallel ranks end an epoch together when the first of them ends its pass.
  if (!steps_in_epoch && cardinality >= 0 && !dp_) steps_in_epoch = cardinality;
  if (cardinality == 0) {
    return absl::InvalidArgumentError(
        dp_ ? "Fit: the training dataset of at least one rank is empty (too little to shard?)"
            : "Fit: the training dataset yielded no element (it is empty)");
  }

  for (callbacks::Callback* cb : options.callbacks) cb->set_trainer(this);
  for (callbacks::Callback* cb : options.callbacks) SLUICE_RETURN_IF_ERROR(cb->OnTrainBegin({}));
  History history;
  callbacks::Logs logs;
  while (epoch_ < options.epochs && !stop_training_) {
    const int64_t epoch = epoch_;
    SLUICE_ASSIGN_OR_RETURN(logs, FitEpoch(options, steps_in_epoch));
    if (dp_) {
      // A callback may stop one rank at the epoch's end: all stop.
      SLUICE_ASSIGN_OR_RETURN(std::vector<double> stop, dp_->Sum({stop_training_ ? 1.0 : 0.0}));
      stop_training_ = stop[0] > 0;
    }
    history.epochs.push_back(epoch);
    for (const auto& [key, value] : logs) history.history[key].push_back(value);
  }
  SLUICE_RETURN_IF_ERROR(MaybeStopProfile(options, /*fit_ends=*/true));
  for (callbacks::Callback* cb : options.callbacks) SLUICE_RETURN_IF_ERROR(cb->OnTrainEnd(logs));
  return history;
}

absl::StatusOr<callbacks::Logs> Trainer::Evaluate(const Dataset& data, EvaluateOptions options) {
  SLUICE_RETURN_IF_ERROR(UseModelDevice("Evaluate"));
  autodiff::SetNumericsStep(-1);
  SLUICE_RETURN_IF_ERROR(CheckLoss("Evaluate"));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Metrics> m, MakeMetrics());
  // Each batch's label check, all read back at once at the end: the loop never waits for the
  // device.
  DeferredLabelChecks label_checks;
  SLUICE_ASSIGN_OR_RETURN(const Dataset shard, ShardForRank(data, "Evaluate", nullptr));
  std::unique_ptr<Iterator> it = OnModelDevice(shard).MakeIterator();
  int64_t steps = 0;
  while (!options.steps || steps < *options.steps) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Evaluate: reading the data: "));
    if (!next->has_value()) break;
    SLUICE_RETURN_IF_ERROR(CheckBatch("Evaluate", **next, 0, /*need_labels=*/true));
    SLUICE_ASSIGN_OR_RETURN(const Element e, ToModelDevice(**next, 0));
    SLUICE_RETURN_IF_ERROR(BuildModel(e[0].shape(), "Evaluate"));
    backend::ScopedPrecision precision(options_.precision);
    SLUICE_ASSIGN_OR_RETURN(Tensor y_pred, model_.Forward(e[0], /*training=*/false));
    ops::LabelRangeCheck label_check;
    absl::StatusOr<Tensor> loss = CompiledLoss(e[1], y_pred, label_check);
    std::string where = absl::StrCat("Evaluate: batch ", steps + 1, ": ");
    SLUICE_RETURN_IF_ERROR(WithContext(loss.status(), where));
    label_checks.Add(std::move(where), std::move(label_check));
    SLUICE_RETURN_IF_ERROR(m->Update(*loss, e[1], y_pred));
    ++steps;
  }
  SLUICE_RETURN_IF_ERROR(label_checks.CheckAll());
  if (dp_) {
    // A rank's shard may be empty; the ranks' steps together may not.
    SLUICE_ASSIGN_OR_RETURN(std::vector<double> all_steps, dp_->Sum({static_cast<double>(steps)}));
    steps = static_cast<int64_t>(all_steps[0]);
  }
  if (steps == 0) return absl::InvalidArgumentError("Evaluate: the dataset yielded no element");
  return MetricLogs(*m);
}

absl::StatusOr<Tensor> Trainer::Predict(const Dataset& data) {
  SLUICE_RETURN_IF_ERROR(UseModelDevice("Predict"));
  autodiff::SetNumericsStep(-1);
  std::unique_ptr<Iterator> it = OnModelDevice(data).MakeIterator();
  std::vector<Tensor> outputs;
  int64_t rows = 0;
  while (true) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Predict: reading the data: "));
    if (!next->has_value()) break;
    SLUICE_RETURN_IF_ERROR(CheckBatch("Predict", **next, 0, /*need_labels=*/false));
    SLUICE_ASSIGN_OR_RETURN(const Element e, ToModelDevice(**next, 0));
    SLUICE_RETURN_IF_ERROR(BuildModel(e[0].shape(), "Predict"));
    backend::ScopedPrecision precision(options_.precision);
    SLUICE_ASSIGN_OR_RETURN(Tensor logits, model_.Forward(e[0], /*training=*/false));
    auto inner = [](const Tensor& t) {
      Shape s = t.shape();
      s.RemoveDim(0);
      return s;
    };
    if (logits.dtype() != DType::kFloat32 || logits.rank() < 1 ||
        (!outputs.empty() && inner(logits) != inner(outputs[0]))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Predict: the model must return float32 [B, ...] with the same inner shape for every "
          "batch, got ",
          DTypeName(logits.dtype()), logits.shape().DebugString(),
          outputs.empty() ? "" : absl::StrCat(" after ", outputs[0].shape().DebugString())));
    }
    rows += logits.dim(0);
    // Predictions are returned on the host (as Keras returns NumPy arrays).
    SLUICE_ASSIGN_OR_RETURN(Tensor host, backend::ToHost(logits));
    outputs.push_back(std::move(host));
  }
  if (outputs.empty()) return absl::InvalidArgumentError("Predict: the dataset yielded no element");
  Shape shape = outputs[0].shape();
  shape.set_dim(0, rows);
  Tensor out(DType::kFloat32, shape);
  char* dst = static_cast<char*>(out.raw_data());
  for (const Tensor& t : outputs) {
    const size_t bytes = t.num_elements() * sizeof(float);
    std::memcpy(dst, t.raw_data(), bytes);
    dst += bytes;
  }
  return out;
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) {
  profiler::Span span("checkpoint", "SaveCheckpoint");
  if (accumulated_ != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot checkpoint at step ", global_step_, ": ", accumulated_, " of ",
        accumulator_->steps(), " accumulated gradients are not applied yet (save every ",
        accumulator_->steps(), " steps)"));
  }
  TrainingCheckpoint ckpt;
  // Host copies, so that training may go on while the file is written.
  SLUICE_ASSIGN_OR_RETURN(ckpt.variables, autodiff::SnapshotVariables(model_.Variables()));
  SLUICE_ASSIGN_OR_RETURN(ckpt.optimizer, optimizer_.SaveState(model_.TrainableVariables()));
  ckpt.frozen_variables = FrozenVariableNames();
  ckpt.epoch = epoch_;
  ckpt.step_in_epoch = step_in_epoch_;
  ckpt.global_step = global_step_;
  RankPosition& position = ckpt;
  if (in_fit_ && iterator_ != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(std::string state, iterator_->Save());
    position.iterator_state = std::move(state);
    if (pending_) {
      // Prefetched to the device: the checkpoint holds host copies.
      SLUICE_ASSIGN_OR_RETURN(position.pending_element, backend::ElementToHost(*pending_));
    }
    if (step_in_epoch_ > 0) {
      for (const metrics::Metric* m : std::as_const(*train_metrics_).All()) {
        SLUICE_ASSIGN_OR_RETURN(double total, m->total());
        position.metrics.push_back({m->name(), total, m->count()});
      }
    }
  }
  if (!dp_) return WriteCheckpoint(path, ckpt);

  // Data-parallel: rank 0 writes every rank's position (its variables are everyone's), then
  // tells the others whether it could.
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> positions,
                          dp_->comm().AllGatherBytes(SerializeRankPosition(position)));
  absl::Status written;
  if (dp_->rank() == 0) {
    ckpt.iterator_state.reset();
    ckpt.pending_element.reset();
    ckpt.metrics.clear();
    for (size_t r = 0; r < positions.size(); ++r) {
      absl::StatusOr<RankPosition> p =
          ParseRankPosition(positions[r], absl::StrCat(path, ": rank ", r));
      if (!p.ok()) {
        written = p.status();
        break;
      }
      ckpt.ranks.push_back(*std::move(p));
    }
    if (written.ok()) written = WriteCheckpoint(path, ckpt);
  }
  return AgreeOnWrite(path, written);
}

absl::Status Trainer::AgreeOnWrite(const std::string& path, const absl::Status& written) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<double> failed, dp_->Sum({written.ok() ? 0.0 : 1.0}));
  if (!written.ok()) return written;
  if (failed[0] > 0) {
    return absl::InternalError(absl::StrCat(path, ": rank 0 could not write the checkpoint"));
  }
  return absl::OkStatus();
}

std::vector<std::string> Trainer::FrozenVariableNames() {
  std::vector<std::string> names;
  for (autodiff::Variable* v : model_.Variables()) {
    if (v->frozen()) names.push_back(v->name());
  }
  return names;
}

absl::Status Trainer::SaveWeights(const std::string& path) {
  profiler::Span span("checkpoint", "SaveWeights");
  TrainingCheckpoint ckpt;
  ckpt.weights_only = true;
  SLUICE_ASSIGN_OR_RETURN(ckpt.variables, autodiff::SnapshotVariables(model_.Variables()));
  ckpt.frozen_variables = FrozenVariableNames();
  // Data-parallel: every rank holds the same variables; rank 0 writes them.
  absl::Status written;
  if (!dp_ || dp_->rank() == 0) written = WriteCheckpoint(path, ckpt);
  if (!dp_) return written;
  return AgreeOnWrite(path, written);
}

absl::Status Trainer::LoadCheckpoint(const std::string& path) {
  if (in_fit_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": LoadCheckpoint during Fit; load before calling Fit"));
  }
  if (!model_.built()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        ": the model is not built yet (a layer learns its input size on its first call): "
        "call model.Build(input_shape) before LoadCheckpoint"));
  }
  SLUICE_ASSIGN_OR_RETURN(TrainingCheckpoint ckpt, ReadCheckpoint(path));
  // The saved freezing first: the optimizer's slots belong to the variables trained then.
  const absl::flat_hash_set<std::string> frozen(ckpt.frozen_variables.begin(),
                                                ckpt.frozen_variables.end());
  auto restore_frozen = [&] {
    for (autodiff::Variable* v : model_.Variables()) v->set_frozen(frozen.contains(v->name()));
  };
  if (ckpt.weights_only) {
    SLUICE_RETURN_IF_ERROR(autodiff::AssignVariables(ckpt.variables, model_.Variables(), path));
    restore_frozen();
    return absl::OkStatus();
  }
  // The input positions belong to as many ranks as wrote them.
  const size_t saved_ranks = std::max<size_t>(1, ckpt.ranks.size());
  const size_t ranks = dp_ ? dp_->size() : 1;
  const bool has_position = ckpt.iterator_state.has_value() || !ckpt.ranks.empty();
  if (has_position && saved_ranks != ranks) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": written by a job of ", saved_ranks, saved_ranks == 1 ? " process" : " ranks",
        ", resumed by ", ranks, ranks == 1 ? " process" : " ranks",
        ": each rank's input position is saved, so resume with ", saved_ranks,
        saved_ranks == 1 ? " process" : " ranks"));
  }
  if (dp_ && !ckpt.ranks.empty()) {
    static_cast<RankPosition&>(ckpt) = std::move(ckpt.ranks[dp_->rank()]);
  }
  ckpt.ranks.clear();
  // Check the optimizer slots against the model before changing anything.
  SLUICE_RETURN_IF_ERROR(autodiff::AssignVariables(ckpt.variables, model_.Variables(), path));
  restore_frozen();
  SLUICE_RETURN_IF_ERROR(
      WithContext(optimizer_.RestoreState(ckpt.optimizer, model_.TrainableVariables()),
                  absl::StrCat(path, ": optimizer state: ")));
  ckpt.variables.clear();  // assigned; only the position is kept for the next Fit
  epoch_ = ckpt.epoch;
  step_in_epoch_ = ckpt.step_in_epoch;
  global_step_ = ckpt.global_step;
  resume_ = std::move(ckpt);
  resume_path_ = path;
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
