#include "train/fit/trainer.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "profiler/profiler.h"
#include "train/autodiff/check_numerics.h"
#include "train/backend/transfer.h"
#include "train/fit/compiled_train_step.h"
#include "train/fit/eager_train_step.h"
#include "train/fit/loss_scale_strategy.h"
#include "train/fit/model_input.h"
#include "train/ops/concat.h"

namespace sluice::train::fit {
namespace {

std::FILE* ProgressStream(const FitOptions& options) {
  return options.progress_stream != nullptr ? options.progress_stream : stdout;
}

}  // namespace

Trainer::Trainer(layers::Module& model, optimizers::Optimizer& optimizer, TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      options_(std::move(options)),
      loss_(options_.loss, model),
      replicas_(options_.communicator, options_.bucket_bytes) {}

Trainer::~Trainer() = default;

absl::StatusOr<History> Trainer::Fit(const Dataset& train, FitOptions options) {
  if (in_fit_) {
    return absl::FailedPreconditionError("Fit: already running (called from a callback?)");
  }
  SLUICE_RETURN_IF_ERROR(CheckFitOptions(options));
  SLUICE_RETURN_IF_ERROR(UseModelDevice("Fit"));
  SLUICE_RETURN_IF_ERROR(
      WithContext(StartLossScaling(options_, options.accumulation_steps, loss_scale_), "Fit: "));
  SLUICE_ASSIGN_OR_RETURN(const Dataset shard,
                          replicas_.Shard(train, options_.auto_shard, "Fit",
                                          options.verbose > 0 ? ProgressStream(options) : nullptr));
  absl::Cleanup end_fit = [this] {
    input_.reset();
    step_.reset();
    profile_.reset();               // a profile still recording (Fit failed) is dropped
    autodiff::SetNumericsStep(-1);  // later errors on this thread are not of a Fit step
    in_fit_ = false;
  };
  SLUICE_RETURN_IF_ERROR(StartFit(shard, options));
  SLUICE_RETURN_IF_ERROR(ResumeFromCallbacks(options.callbacks));
  if (resume_) SLUICE_RETURN_IF_ERROR(ResumeFromCheckpoint());
  SLUICE_ASSIGN_OR_RETURN(const std::optional<int64_t> steps_in_epoch,
                          StepsInEpoch(shard, options));

  for (callbacks::Callback* cb : options.callbacks) cb->set_trainer(this);
  size_t began = 0;  // the callbacks whose OnTrainBegin returned
  absl::StatusOr<History> history = RunEpochs(options, steps_in_epoch, began);
  if (!history.ok()) {
    for (size_t i = 0; i < began; ++i) options.callbacks[i]->OnTrainAborted(history.status());
  }
  return history;
}

absl::StatusOr<History> Trainer::RunEpochs(const FitOptions& options,
                                           std::optional<int64_t> steps_in_epoch, size_t& began) {
  for (callbacks::Callback* cb : options.callbacks) {
    SLUICE_RETURN_IF_ERROR(cb->OnTrainBegin({}));
    ++began;
  }
  History history;
  callbacks::Logs logs;
  while (position_.epoch < options.epochs && !position_.stop_training) {
    const int64_t epoch = position_.epoch;
    SLUICE_ASSIGN_OR_RETURN(logs, FitEpoch(options, steps_in_epoch));
    // A callback may stop one rank at the epoch's end: all stop.
    SLUICE_ASSIGN_OR_RETURN(std::vector<double> stop,
                            replicas_.Sum({position_.stop_training ? 1.0 : 0.0}));
    position_.stop_training = stop[0] > 0;
    history.epochs.push_back(epoch);
    for (const auto& [key, value] : logs) history.history[key].push_back(value);
  }
  SLUICE_RETURN_IF_ERROR(profile_->AfterStep(position_.global_step, /*fit_ends=*/true));
  for (callbacks::Callback* cb : options.callbacks) SLUICE_RETURN_IF_ERROR(cb->OnTrainEnd(logs));
  return history;
}

absl::Status Trainer::StartFit(const Dataset& train, const FitOptions& options) {
  in_fit_ = true;
  position_.stop_training = false;
  position_.preemption_requested = false;
  position_.preempting = false;
  // The pass's index stays on the host: it is added after the copies to the device.
  input_ = std::make_unique<EpochIterator>(OnModelDevice(train, device_, options_.device_prefetch),
                                           options.seed);
  position_.epoch = 0;
  position_.step_in_epoch = 0;
  loss_.ClearLabelChecks();
  SLUICE_RETURN_IF_ERROR(loss_.CheckReduced("Fit"));
  if (!train_metrics_) {
    SLUICE_ASSIGN_OR_RETURN(train_metrics_, CompiledMetrics::Create(options_, loss_.loss()));
  }
  train_metrics_->Reset();
  MakeStep(options);
  if (!model_.built()) {
    // Keras builds a model on its first batch: read it now (it is trained on first) so that
    // the variables exist before the optimizer, the first step and the ranks' sync see them.
    absl::StatusOr<std::optional<Element>> first = input_->Next();
    SLUICE_RETURN_IF_ERROR(WithContext(first.status(), "Fit: reading the data: "));
    if (first->has_value()) {
      SLUICE_RETURN_IF_ERROR(CheckModelInput("Fit", **first, 1, /*need_targets=*/true));
      SLUICE_RETURN_IF_ERROR(BuildModel((**first)[1].shape(), "Fit"));
      input_->HoldBack(**std::move(first));
    }
  }
  return WithContext(replicas_.SyncModel(model_), "Fit: ");
}

void Trainer::MakeStep(const FitOptions& options) {
  strategy_ = MakeStepStrategy(optimizer_, {.loss_scale = loss_scale_ ? &*loss_scale_ : nullptr,
                                            .data_parallel = replicas_.data_parallel(),
                                            .accumulation_steps = options.accumulation_steps,
                                            .reduce_during_backward = !options_.train_step});
  const StepParts parts{model_,  optimizer_,        loss_, *train_metrics_, *strategy_,
                        phases_, options_.precision};
  if (options_.train_step) {
    step_ = std::make_unique<CustomTrainStep>(options_.train_step, parts);
  } else if (!options_.run_eagerly && strategy_->Traceable()) {
    step_ = std::make_unique<CompiledTrainStep>(
        parts,
        function::FunctionOptions{.name = "train_step", .warn = [this](const std::string& message) {
                                    if (replicas_.chief()) {
                                      std::fprintf(stderr, "Fit: warning: %s\n", message.c_str());
                                    }
                                  }});
  } else {
    step_ = std::make_unique<EagerTrainStep>(parts);
  }
  std::string dir = options.profile_dir;
  if (replicas_.distributed()) absl::StrAppend(&dir, "/rank", replicas_.rank());
  const bool reports = options.verbose > 0 && replicas_.chief();
  profile_ = std::make_unique<ProfileWindow>(options.profile_steps, std::move(dir),
                                             reports ? ProgressStream(options) : nullptr);
}

absl::StatusOr<std::optional<int64_t>> Trainer::StepsInEpoch(const Dataset& train,
                                                             const FitOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const int64_t cardinality,
                          replicas_.AgreedCardinality(train.Cardinality()));
  input_->set_pass_length(cardinality >= 0 ? cardinality : -1);
  if (cardinality == 0) {
    return absl::InvalidArgumentError(
        replicas_.distributed()
            ? "Fit: the training dataset of at least one rank is empty (too little to shard?)"
            : "Fit: the training dataset yielded no element (it is empty)");
  }
  // Data-parallel ranks end an epoch together when the first of them ends its pass.
  if (!options.steps_per_epoch && cardinality >= 0 && !replicas_.distributed()) {
    return cardinality;
  }
  return options.steps_per_epoch;
}

absl::StatusOr<callbacks::Logs> Trainer::FitEpoch(const FitOptions& options,
                                                  std::optional<int64_t> steps_in_epoch) {
  const int64_t epoch = position_.epoch;
  if (position_.step_in_epoch == 0) train_metrics_->Reset();
  for (callbacks::Callback* cb : options.callbacks) {
    SLUICE_RETURN_IF_ERROR(cb->OnEpochBegin(epoch, {}));
  }
  std::optional<callbacks::ProgressBar> progress = MakeProgressBar(options, steps_in_epoch);
  EpochLoop loop({*input_, *step_, loss_, *train_metrics_, *strategy_, replicas_, *profile_,
                  phases_, optimizer_, position_, device_},
                 options, steps_in_epoch, progress ? &*progress : nullptr);
  SLUICE_ASSIGN_OR_RETURN(EpochResult result, loop.Run());
  callbacks::Logs logs = std::move(result.logs);
  if (replicas_.distributed() && !position_.preempting) {
    // A rank asked to stop in the epoch's last step, after which no step agreed on it: agree now,
    // before the validation that the grace period has no time for.
    SLUICE_ASSIGN_OR_RETURN(const bool requested, AnyReplica(position_.preemption_requested));
    if (requested) position_.stop_training = position_.preempting = true;
  }
  // Not in a preemption's grace period: the backup is what matters then.
  if (options.validation_data && !position_.preempting) {
    SLUICE_ASSIGN_OR_RETURN(callbacks::Logs val, Evaluate(*options.validation_data));
    for (const auto& [key, value] : val) logs["val_" + key] = value;
  }
  logs["learning_rate"] = optimizer_.learning_rate();
  // A complete epoch moves the position on, so that a checkpoint a callback saves now resumes
  // at the next epoch; an epoch cut short by StopTraining stays, and a resumed run finishes it.
  if (result.completed) {
    ++position_.epoch;
    position_.step_in_epoch = 0;
  }
  if (progress) progress->Finish(result.steps, result.images * replicas_.size(), logs);
  for (callbacks::Callback* cb : options.callbacks) {
    SLUICE_RETURN_IF_ERROR(cb->OnEpochEnd(epoch, logs));
  }
  return logs;
}

std::optional<callbacks::ProgressBar> Trainer::MakeProgressBar(const FitOptions& options,
                                                               std::optional<int64_t> steps) const {
  if (options.verbose <= 0 || !replicas_.chief()) return std::nullopt;
  callbacks::ProgressBarOptions bar_options{.stream = options.progress_stream,
                                            .first_step = position_.step_in_epoch};
  if (options.verbose == 2) bar_options.interactive = false;
  return std::make_optional<callbacks::ProgressBar>(
      absl::StrCat("Epoch ", position_.epoch + 1, "/", options.epochs),
      steps.value_or(input_->pass_length()), std::move(bar_options));
}

absl::Status Trainer::UseModelDevice(absl::string_view who) {
  device_ = model_.device();
  return WithContext(backend::CheckPrecisionSupported(device_, options_.precision),
                     absl::StrCat(who, ": "));
}

absl::Status Trainer::BuildModel(const Shape& input_shape, absl::string_view who) {
  if (model_.built()) return absl::OkStatus();
  absl::Status built = model_.Build(input_shape);
  if (!built.ok() && input_shape.rank() == 1) {
    // The usual cause: a pipeline without its Batch, whose examples' features look like a batch.
    built =
        WithMessage(built, absl::StrCat(built.message(), "; the inputs ", input_shape.DebugString(),
                                        " have one dimension: is the dataset batched "
                                        "(Dataset::Batch)?"));
  }
  SLUICE_RETURN_IF_ERROR(WithContext(built, absl::StrCat(who, ": ")));
  SLUICE_RETURN_IF_ERROR(
      autodiff::CheckUniqueNames(model_.Variables(), absl::StrCat(who, ": the model")));
  return model_.To(device_);
}

absl::StatusOr<Element> Trainer::PrepareBatch(absl::string_view who, const Element& batch,
                                              bool need_targets) {
  SLUICE_RETURN_IF_ERROR(CheckModelInput(who, batch, 0, need_targets));
  SLUICE_ASSIGN_OR_RETURN(Element e, ToModelDevice(batch, device_, 0));
  SLUICE_RETURN_IF_ERROR(BuildModel(e[0].shape(), who));
  return e;
}

absl::StatusOr<callbacks::Logs> Trainer::Evaluate(const Dataset& data, EvaluateOptions options) {
  SLUICE_RETURN_IF_ERROR(UseModelDevice("Evaluate"));
  autodiff::SetNumericsStep(-1);
  SLUICE_RETURN_IF_ERROR(loss_.CheckReduced("Evaluate"));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CompiledMetrics> m,
                          CompiledMetrics::Create(options_, loss_.loss()));
  // Its own label checks, all read back at once at the end: the loop never waits for the device.
  CompiledLoss loss(loss_.shared_loss(), model_);
  SLUICE_ASSIGN_OR_RETURN(const Dataset shard,
                          replicas_.Shard(data, options_.auto_shard, "Evaluate", nullptr));
  std::unique_ptr<Iterator> it =
      OnModelDevice(shard, device_, options_.device_prefetch).MakeIterator();
  int64_t steps = 0;
  while (!options.steps || steps < *options.steps) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Evaluate: reading the data: "));
    if (!next->has_value()) break;
    SLUICE_ASSIGN_OR_RETURN(const Element e, PrepareBatch("Evaluate", **next, true));
    backend::ScopedPrecision precision(options_.precision);
    SLUICE_ASSIGN_OR_RETURN(Tensor y_pred, model_.Forward(e[0], /*training=*/false));
    const std::string where = absl::StrCat("Evaluate: batch ", steps + 1, ": ");
    absl::StatusOr<Tensor> batch_loss = loss.Compute(e[1], y_pred, where);
    SLUICE_RETURN_IF_ERROR(WithContext(batch_loss.status(), where));
    SLUICE_RETURN_IF_ERROR(m->Update(*batch_loss, e[1], y_pred));
    ++steps;
  }
  SLUICE_RETURN_IF_ERROR(loss.CheckLabels());
  // A rank's shard may be empty; the ranks' steps together may not.
  SLUICE_ASSIGN_OR_RETURN(std::vector<double> all_steps,
                          replicas_.Sum({static_cast<double>(steps)}));
  if (all_steps[0] == 0)
    return absl::InvalidArgumentError("Evaluate: the dataset yielded no element");
  return m->Logs(replicas_);
}

absl::StatusOr<Tensor> Trainer::Predict(const Dataset& data) {
  SLUICE_RETURN_IF_ERROR(UseModelDevice("Predict"));
  autodiff::SetNumericsStep(-1);
  std::unique_ptr<Iterator> it =
      OnModelDevice(data, device_, options_.device_prefetch).MakeIterator();
  std::vector<Tensor> outputs;
  while (true) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Predict: reading the data: "));
    if (!next->has_value()) break;
    SLUICE_ASSIGN_OR_RETURN(const Element e, PrepareBatch("Predict", **next, false));
    backend::ScopedPrecision precision(options_.precision);
    SLUICE_ASSIGN_OR_RETURN(Tensor logits, model_.Forward(e[0], /*training=*/false));
    SLUICE_RETURN_IF_ERROR(
        CheckPrediction("Predict", logits, outputs.empty() ? nullptr : &outputs[0]));
    // Predictions are returned on the host (as Keras returns NumPy arrays).
    SLUICE_ASSIGN_OR_RETURN(Tensor host, backend::ToHost(logits));
    outputs.push_back(std::move(host));
  }
  if (outputs.empty()) return absl::InvalidArgumentError("Predict: the dataset yielded no element");
  return ops::Concat(outputs, 0);
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) {
  profiler::Span span("checkpoint", "SaveCheckpoint");
  TrainingCheckpoint ckpt;
  // Written before this returns, before the next step changes them: host values are shared,
  // not copied (a checkpoint the size of the model and its slots, not twice that).
  constexpr autodiff::HostValues kShare = autodiff::HostValues::kShare;
  SLUICE_ASSIGN_OR_RETURN(ckpt.variables, autodiff::SnapshotVariables(model_.Variables(), kShare));
  SLUICE_ASSIGN_OR_RETURN(ckpt.optimizer,
                          optimizer_.SaveState(model_.TrainableVariables(), kShare));
  ckpt.frozen_variables = autodiff::FrozenNames(model_.Variables());
  ckpt.epoch = position_.epoch;
  ckpt.step_in_epoch = position_.step_in_epoch;
  ckpt.global_step = position_.global_step;
  if (loss_scale_) ckpt.loss_scale = loss_scale_->state();
  if (in_fit_ && input_ != nullptr) {
    SLUICE_RETURN_IF_ERROR(strategy_->SaveState(ckpt));  // an accumulation's partial sums
    SLUICE_RETURN_IF_ERROR(input_->Save(ckpt));
    if (position_.step_in_epoch > 0) {
      SLUICE_ASSIGN_OR_RETURN(ckpt.metrics, train_metrics_->State());
    }
  }
  if (!replicas_.distributed()) return WriteCheckpoint(path, ckpt);
  return WriteEveryRank(path, ckpt);
}

absl::Status Trainer::WriteEveryRank(const std::string& path, TrainingCheckpoint& ckpt) {
  // Rank 0 writes every rank's position (its variables are everyone's), then tells the others
  // whether it could.
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> positions,
                          replicas_.AllGather(SerializeRankPosition(ckpt)));
  absl::Status written;
  if (replicas_.chief()) {
    static_cast<RankPosition&>(ckpt) = RankPosition();
    for (size_t r = 0; r < positions.size() && written.ok(); ++r) {
      absl::StatusOr<RankPosition> p =
          ParseRankPosition(positions[r], absl::StrCat(path, ": rank ", r));
      if (p.ok()) ckpt.ranks.push_back(*std::move(p));
      written = p.status();
    }
    if (written.ok()) written = WriteCheckpoint(path, ckpt);
  }
  return replicas_.AgreeOnWrite(path, written);
}

absl::StatusOr<bool> Trainer::AnyReplica(bool flag) {
  if (!replicas_.distributed()) return flag;
  SLUICE_ASSIGN_OR_RETURN(const std::vector<double> flags, replicas_.Sum({flag ? 1.0 : 0.0}));
  return flags[0] > 0;
}

absl::Status Trainer::SaveWeights(const std::string& path) {
  profiler::Span span("checkpoint", "SaveWeights");
  TrainingCheckpoint ckpt;
  ckpt.weights_only = true;
  SLUICE_ASSIGN_OR_RETURN(ckpt.variables, autodiff::SnapshotVariables(
                                              model_.Variables(), autodiff::HostValues::kShare));
  ckpt.frozen_variables = autodiff::FrozenNames(model_.Variables());
  // Data-parallel: every rank holds the same variables; rank 0 writes them.
  absl::Status written;
  if (replicas_.chief()) written = WriteCheckpoint(path, ckpt);
  return replicas_.AgreeOnWrite(path, written);
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
  return Restore(std::move(ckpt), path);
}

absl::Status Trainer::Restore(TrainingCheckpoint ckpt, const std::string& path) {
  if (!ckpt.weights_only) {
    SLUICE_RETURN_IF_ERROR(CheckResumingRanks(path, ckpt, replicas_.size()));
  }
  // Check the variables against the model before changing anything.
  SLUICE_RETURN_IF_ERROR(autodiff::AssignVariables(ckpt.variables, model_.Variables(), path));
  // The saved freezing before the optimizer's slots: they belong to the variables trained then.
  autodiff::SetFrozen(model_.Variables(), ckpt.frozen_variables);
  if (ckpt.weights_only) return absl::OkStatus();
  if (replicas_.distributed() && !ckpt.ranks.empty()) {
    static_cast<RankPosition&>(ckpt) = std::move(ckpt.ranks[replicas_.rank()]);
  }
  ckpt.ranks.clear();
  SLUICE_RETURN_IF_ERROR(
      WithContext(optimizer_.RestoreState(ckpt.optimizer, model_.TrainableVariables()),
                  absl::StrCat(path, ": optimizer state: ")));
  ckpt.variables.clear();  // assigned; only the position is kept for the next Fit
  position_.epoch = ckpt.epoch;
  position_.step_in_epoch = ckpt.step_in_epoch;
  position_.global_step = ckpt.global_step;
  resume_ = std::move(ckpt);
  resume_path_ = path;
  return absl::OkStatus();
}

absl::Status Trainer::ResumeFromCallbacks(const std::vector<callbacks::Callback*>& callbacks) {
  std::vector<std::string> candidates;
  for (callbacks::Callback* cb : callbacks) {
    if (!candidates.empty()) break;
    SLUICE_ASSIGN_OR_RETURN(candidates, cb->CheckpointsToResume());
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    absl::StatusOr<TrainingCheckpoint> ckpt = ReadCheckpoint(candidates[i]);
    if (ckpt.ok()) {
      SLUICE_RETURN_IF_ERROR(Restore(*std::move(ckpt), candidates[i]));
      if (i > 0 && replicas_.chief()) {
        std::fprintf(stderr, "Fit: warning: %s cannot be read; resuming from %s instead\n",
                     candidates[0].c_str(), candidates[i].c_str());
      } else if (replicas_.chief()) {
        // A run that starts where another stopped says so, and where.
        const std::string where =
            position_.step_in_epoch == 0
                ? absl::StrCat("at the start of epoch ", position_.epoch + 1)
                : absl::StrCat("step ", position_.step_in_epoch, " of epoch ", position_.epoch + 1);
        std::fprintf(stderr, "Fit: resuming from %s (global step %lld, %s)\n",
                     candidates[i].c_str(), static_cast<long long>(position_.global_step),
                     where.c_str());
      }
      break;
    }
    if (i + 1 == candidates.size()) {
      return WithContext(ckpt.status(), "Fit: no checkpoint to resume from can be read: ");
    }
    if (replicas_.chief()) {
      std::fprintf(stderr, "Fit: warning: skipping %s\n", ckpt.status().ToString().c_str());
    }
  }
  // Every rank must continue from the same step (the ranks read one shared folder).
  return WithContext(replicas_.AgreeOnStep(position_.global_step), "Fit: resuming: ");
}

absl::Status Trainer::ResumeFromCheckpoint() {
  TrainingCheckpoint ckpt = *std::move(resume_);
  resume_.reset();
  position_.epoch = ckpt.epoch;
  position_.step_in_epoch = ckpt.step_in_epoch;
  position_.global_step = ckpt.global_step;
  SLUICE_RETURN_IF_ERROR(input_->Restore(ckpt, resume_path_));
  if (position_.step_in_epoch > 0) train_metrics_->Restore(ckpt.metrics);
  SLUICE_RETURN_IF_ERROR(strategy_->RestoreState(ckpt, resume_path_));
  // Fit made the scale (StartLossScaling) before resuming. A checkpoint of a run without one, or
  // from before checkpoints kept it, leaves the fresh scale.
  if (loss_scale_ && ckpt.loss_scale) {
    SLUICE_RETURN_IF_ERROR(
        WithContext(loss_scale_->Restore(*ckpt.loss_scale), absl::StrCat(resume_path_, ": ")));
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
