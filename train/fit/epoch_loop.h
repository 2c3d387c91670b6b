#ifndef SLUICE_TRAIN_FIT_EPOCH_LOOP_H_
#define SLUICE_TRAIN_FIT_EPOCH_LOOP_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/element.h"
#include "train/backend/backend.h"
#include "train/callbacks/callback.h"
#include "train/callbacks/progress_bar.h"
#include "train/fit/compiled_loss.h"
#include "train/fit/compiled_metrics.h"
#include "train/fit/epoch_iterator.h"
#include "train/fit/profile_window.h"
#include "train/fit/replicas.h"
#include "train/fit/step_phases.h"
#include "train/fit/step_strategy.h"
#include "train/fit/train_step.h"
#include "train/fit/trainer_options.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

// Where the training loop stands: what callbacks read and checkpoints save.
struct LoopPosition {
  int64_t epoch = 0;          // the epoch in progress (0-based)
  int64_t step_in_epoch = 0;  // steps of that epoch already taken
  int64_t global_step = 0;    // steps taken in all
  bool stop_training = false;
  // Data-parallel preemption (TrainingLoop::StopForPreemption): this rank's request, summed with
  // the next step's agreement, and the ranks' agreed stop.
  bool preemption_requested = false;
  bool preempting = false;
};

// What one epoch's steps produced.
struct EpochResult {
  callbacks::Logs logs;
  int64_t steps = 0;       // taken in this run
  int64_t images = 0;      // trained on in this run, by this rank
  bool completed = false;  // false: StopTraining cut the epoch short
};

// The steps of one epoch of Fit: read a batch, agree with the other ranks that every one takes
// it, run the step, read the logs when someone will read them, call the callbacks, update the
// progress. Each step's time is split into waiting for the input and computing.
class EpochLoop {
 public:
  struct Parts {
    EpochIterator& input;
    TrainStep& step;
    CompiledLoss& loss;
    CompiledMetrics& metrics;
    StepStrategy& strategy;
    Replicas& replicas;
    ProfileWindow& profile;
    StepPhases& phases;
    optimizers::Optimizer& optimizer;
    LoopPosition& position;
    const Device& device;  // the model's
  };
  // `steps_in_epoch` unset: until the pass ends. `progress`: nullptr for none.
  EpochLoop(Parts parts, const FitOptions& options, std::optional<int64_t> steps_in_epoch,
            callbacks::ProgressBar* progress)
      : p_(parts), options_(options), steps_in_epoch_(steps_in_epoch), progress_(progress) {}

  absl::StatusOr<EpochResult> Run();

 private:
  // The label checks of this many steps at most wait for a read of the logs.
  static constexpr size_t kMaxDeferredLabelChecks = 64;
  // The host queues at most this many steps ahead of the device (BoundRunAhead).
  static constexpr size_t kMaxStepsInFlight = 2;

  // Data-parallel: whether any rank has something that may read a step's logs.
  absl::Status AgreeOnLogReaders();
  // One step: false when the epoch ends before it.
  absl::StatusOr<bool> Step();
  // Whether `next` (just read) is this epoch's next step, and what to do with it otherwise.
  absl::StatusOr<bool> TakesStep(std::optional<Element>& next, bool next_pass,
                                 const std::string& where);
  // Data-parallel: every rank takes this step, or none does; all stop if any rank asked to.
  absl::StatusOr<bool> AgreeOnStep(std::optional<Element>& next, bool next_pass,
                                   const std::string& where);
  absl::Status Train(const Element& element, const std::string& where);
  // After a step is queued on a device that runs asynchronously: waits for the end of the step
  // kMaxStepsInFlight back, so that a device-bound loop waits here, as device time, and not in
  // its input, whose copies queue behind the kernels (it would read as input-bound). Bounds the
  // memory that queued steps hold, too. Nothing on the CPU.
  absl::Status BoundRunAhead();
  // After a step: the logs when read, the callbacks and the progress.
  absl::Status AfterStep(int64_t step_start, double compute_start, const std::string& where);
  bool WantsLogs() const;
  absl::Status Finish();
  double WaitShare() const;

  Parts p_;
  const FitOptions& options_;
  const std::optional<int64_t> steps_in_epoch_;
  callbacks::ProgressBar* progress_;

  EpochResult result_;
  int64_t first_step_ = 0;
  double start_ = 0;
  double wait_seconds_ = 0;
  double compute_seconds_ = 0;
  bool interrupted_ = false;
  bool peer_ended_ = false;  // data-parallel: another rank's pass ended first
  // Data-parallel: whether any rank may read a step's logs (a live progress bar, a callback).
  // Where none may, the steps skip agreeing on it: one small all-reduce a step less.
  bool logs_may_be_read_ = true;
  // The ends of the steps queued and not yet waited for, oldest first.
  std::deque<std::shared_ptr<backend::Event>> in_flight_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_EPOCH_LOOP_H_
