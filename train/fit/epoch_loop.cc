#include "train/fit/epoch_loop.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/monotonic_clock.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/fit/model_input.h"

namespace sluice::train::fit {

absl::StatusOr<EpochResult> EpochLoop::Run() {
  first_step_ = p_.position.step_in_epoch;
  start_ = MonotonicSeconds();
  if (DataParallel* dp = p_.replicas.data_parallel()) dp->ResetOverlap();
  SLUICE_RETURN_IF_ERROR(AgreeOnLogReaders());
  while (!steps_in_epoch_ || p_.position.step_in_epoch < *steps_in_epoch_) {
    SLUICE_ASSIGN_OR_RETURN(const bool stepped, Step());
    if (!stepped) break;
  }
  SLUICE_RETURN_IF_ERROR(Finish());
  return std::move(result_);
}

absl::Status EpochLoop::AgreeOnLogReaders() {
  if (!p_.replicas.distributed()) return absl::OkStatus();
  // Callbacks that read no batch logs (BackupAndRestore) need no agreement per step.
  bool mine = progress_ != nullptr && progress_->interactive();
  // Whether any step may: a callback that reads every Nth global step must not be asked about
  // this one only (an epoch that starts between its steps would skip the agreement).
  for (callbacks::Callback* cb : options_.callbacks) mine = mine || cb->MayNeedBatchLogs();
  absl::StatusOr<std::vector<double>> any = p_.replicas.Sum({mine ? 1.0 : 0.0});
  if (!any.ok()) return WithContext(any.status(), "Fit: ");
  logs_may_be_read_ = (*any)[0] > 0;
  return absl::OkStatus();
}

absl::StatusOr<bool> EpochLoop::Step() {
  LoopPosition& pos = p_.position;
  SLUICE_RETURN_IF_ERROR(p_.profile.BeforeStep(pos.global_step + 1));
  const int64_t step_start = p_.phases.Begin();
  const double t0 = MonotonicSeconds();
  absl::StatusOr<std::optional<Element>> next = p_.input.Next();
  const double t1 = MonotonicSeconds();
  p_.phases.Mark("input");
  wait_seconds_ += t1 - t0;
  SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Fit: reading the training data: "));
  // The first element of the next pass starts the next epoch.
  const bool next_pass = next->has_value() && EpochIterator::PassIndex(**next) == 0 &&
                         pos.step_in_epoch > 0 && !options_.steps_per_epoch;
  const std::string where =
      absl::StrCat("Fit: epoch ", pos.epoch + 1, ", step ", pos.step_in_epoch + 1, ": ");
  SLUICE_ASSIGN_OR_RETURN(const bool takes, TakesStep(*next, next_pass, where));
  if (!takes) return false;
  SLUICE_RETURN_IF_ERROR(Train(**next, where));
  SLUICE_RETURN_IF_ERROR(WithContext(BoundRunAhead(), where));
  SLUICE_RETURN_IF_ERROR(AfterStep(step_start, t1, where));
  SLUICE_RETURN_IF_ERROR(p_.profile.AfterStep(pos.global_step, /*fit_ends=*/false));
  // Data-parallel ranks stop together, at the next step's agreement.
  if (pos.stop_training && !p_.replicas.distributed()) {
    interrupted_ = !steps_in_epoch_ || pos.step_in_epoch < *steps_in_epoch_;
    return false;
  }
  return true;
}

absl::StatusOr<bool> EpochLoop::TakesStep(std::optional<Element>& next, bool next_pass,
                                          const std::string& where) {
  if (p_.replicas.distributed()) {
    SLUICE_ASSIGN_OR_RETURN(const bool agreed, AgreeOnStep(next, next_pass, where));
    if (!agreed) return false;
  }
  if (!next.has_value()) {
    if (p_.position.step_in_epoch == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Fit: the training dataset yielded no element in epoch ", p_.position.epoch + 1));
    }
    return false;
  }
  if (next_pass) {
    p_.input.HoldBack(*std::move(next));
    return false;
  }
  return true;
}

absl::StatusOr<bool> EpochLoop::AgreeOnStep(std::optional<Element>& next, bool next_pass,
                                            const std::string& where) {
  LoopPosition& pos = p_.position;
  const int ranks = p_.replicas.size();
  absl::StatusOr<std::vector<double>> agreed =
      p_.replicas.Sum({next.has_value() && !next_pass ? 1.0 : 0.0, pos.stop_training ? 1.0 : 0.0,
                       pos.preemption_requested ? 1.0 : 0.0});
  if (!agreed.ok()) return WithContext(agreed.status(), where);
  if ((*agreed)[1] == 0 && (*agreed)[2] == 0 && (*agreed)[0] == ranks) return true;
  if (next.has_value()) p_.input.HoldBack(*std::move(next));  // not trained on: kept
  if ((*agreed)[1] > 0 || (*agreed)[2] > 0) {
    pos.stop_training = true;
    pos.preempting = (*agreed)[2] > 0;
    interrupted_ = true;  // a resumed run finishes the epoch
    return false;
  }
  if (pos.step_in_epoch == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: ", ranks - static_cast<int>((*agreed)[0]), " of ", ranks,
                     " ranks' training data yielded no element in epoch ", pos.epoch + 1,
                     ": too few files or elements to shard over ", ranks, " ranks?"));
  }
  peer_ended_ = !next_pass;
  return false;
}

absl::Status EpochLoop::Train(const Element& element, const std::string& where) {
  SLUICE_RETURN_IF_ERROR(CheckModelInput("Fit", element, 1, /*need_targets=*/true));
  SLUICE_ASSIGN_OR_RETURN(const Element on_device, ToModelDevice(element, p_.device, 1));
  const EnumeratedBatch batch(on_device);
  p_.phases.Mark("prepare");
  autodiff::SetNumericsStep(p_.position.global_step + 1);  // names the step in its errors
  SLUICE_RETURN_IF_ERROR(WithContext(p_.step.Run(batch.inputs, batch.targets, where), where));
  result_.images += batch.inputs.dim(0);
  ++p_.position.step_in_epoch;
  ++p_.position.global_step;
  return absl::OkStatus();
}

absl::Status EpochLoop::BoundRunAhead() {
  if (p_.device.is_cpu()) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(p_.device));
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<backend::Event> done, backend->RecordEvent());
  in_flight_.push_back(std::move(done));
  while (in_flight_.size() > kMaxStepsInFlight) {
    const absl::Status waited = in_flight_.front()->Synchronize();
    in_flight_.pop_front();
    SLUICE_RETURN_IF_ERROR(waited);
  }
  p_.phases.Mark("device_wait");
  return absl::OkStatus();
}

bool EpochLoop::WantsLogs() const {
  bool read_logs = progress_ != nullptr && progress_->WantsUpdate();
  for (callbacks::Callback* cb : options_.callbacks) read_logs = read_logs || cb->NeedsBatchLogs();
  return read_logs;
}

absl::Status EpochLoop::AfterStep(int64_t step_start, double compute_start,
                                  const std::string& where) {
  // Reading the metrics waits for the device: only for steps whose logs someone reads. The
  // labels' checks come with them, and at least every kMaxDeferredLabelChecks steps.
  bool read_logs = WantsLogs();
  if (p_.replicas.distributed()) {
    if (logs_may_be_read_) {
      // Reading them sums them over the ranks: all read if any rank's callbacks want them.
      absl::StatusOr<std::vector<double>> wanted = p_.replicas.Sum({read_logs ? 1.0 : 0.0});
      if (!wanted.ok()) return WithContext(wanted.status(), where);
      read_logs = (*wanted)[0] > 0;
    } else {
      read_logs = false;  // no rank agreed to read: a read alone would pair with nothing
    }
  }
  callbacks::Logs logs;
  if (read_logs || p_.loss.unchecked_batches() >= kMaxDeferredLabelChecks) {
    SLUICE_RETURN_IF_ERROR(p_.loss.CheckLabels());
  }
  if (read_logs) {
    SLUICE_ASSIGN_OR_RETURN(logs, p_.metrics.Logs(p_.replicas));
  }
  compute_seconds_ += MonotonicSeconds() - compute_start;
  p_.phases.Mark("logs");

  const int64_t step = p_.position.step_in_epoch;
  logs["learning_rate"] = p_.optimizer.learning_rate();
  logs["input_wait_share"] = WaitShare();
  p_.strategy.AddLogs(logs);
  for (callbacks::Callback* cb : options_.callbacks) {
    SLUICE_RETURN_IF_ERROR(cb->OnBatchEnd(step - 1, logs));
  }
  if (progress_ != nullptr && read_logs) {
    // Data-parallel: the job's images, as every rank takes batches of the same size.
    progress_->Update(step - first_step_, result_.images * p_.replicas.size(), logs);
  }
  p_.phases.Mark("callbacks");
  p_.phases.End(step_start);
  return absl::OkStatus();
}

double EpochLoop::WaitShare() const {
  const double total = wait_seconds_ + compute_seconds_;
  return total > 0 ? wait_seconds_ / total : 0.0;
}

absl::Status EpochLoop::Finish() {
  const bool whole_passes = !options_.steps_per_epoch;
  if (p_.replicas.distributed() && !interrupted_ && whole_passes && peer_ended_) {
    SLUICE_RETURN_IF_ERROR(p_.input.SkipToNextPass());
  }
  if (!interrupted_ && whole_passes) p_.input.set_pass_length(p_.position.step_in_epoch);
  result_.completed = !interrupted_;
  result_.steps = p_.position.step_in_epoch - first_step_;
  SLUICE_RETURN_IF_ERROR(p_.loss.CheckLabels());
  SLUICE_ASSIGN_OR_RETURN(result_.logs, p_.metrics.Logs(p_.replicas));
  result_.logs["input_wait_share"] = WaitShare();
  p_.strategy.AddLogs(result_.logs);
  const double seconds = MonotonicSeconds() - start_;
  double images = static_cast<double>(result_.images);
  if (DataParallel* dp = p_.replicas.data_parallel()) {
    // The job's rate: every rank's images over this rank's time; and how much of the
    // gradients' all-reduce time the step waited for (the rest ran behind the backward pass).
    SLUICE_ASSIGN_OR_RETURN(std::vector<double> sums,
                            dp->Sum({images, dp->exposed_seconds(), dp->allreduce_seconds()}));
    images = sums[0];
    result_.logs["allreduce_seconds"] = sums[2] / dp->size();
    result_.logs["allreduce_exposed_share"] = sums[2] > 0 ? std::min(1.0, sums[1] / sums[2]) : 0.0;
  }
  result_.logs["images_per_second"] = seconds > 0 ? images / seconds : 0.0;
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
