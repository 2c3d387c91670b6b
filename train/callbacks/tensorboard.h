#ifndef SLUICE_TRAIN_CALLBACKS_TENSORBOARD_H_
#define SLUICE_TRAIN_CALLBACKS_TENSORBOARD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "train/callbacks/callback.h"
#include "train/callbacks/summary_writer.h"

namespace sluice::train::callbacks {

struct TensorBoardOptions {
  std::string log_dir;
  // 0: per epoch only; N: also the running metrics every N steps.
  int64_t update_freq = 0;
};

// keras.callbacks.TensorBoard, scalars only. As Keras, training series go to
// `<log_dir>/train` and validation ones to `<log_dir>/validation`, tagged "epoch_<metric>" at
// the epoch number (loss, accuracy, learning_rate, input_wait_share, ...; the validation
// run's metrics without their "val_" prefix, so both runs share a chart) and, with update_freq,
// "batch_<metric>" at the global step.
class TensorBoard : public Callback {
 public:
  explicit TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {}

  absl::Status OnTrainBegin(const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnBatchEnd(int64_t batch, const Logs& logs) override;
  // Only at the steps it writes (every update_freq).
  bool NeedsBatchLogs() const override;
  bool MayNeedBatchLogs() const override { return options_.update_freq != 0; }
  absl::Status OnTrainEnd(const Logs& logs) override;

  // The event files (empty before OnTrainBegin; validation's until it is first written).
  std::string train_path() const { return train_ ? train_->path() : ""; }
  std::string validation_path() const { return validation_ ? validation_->path() : ""; }

 private:
  TensorBoardOptions options_;
  std::unique_ptr<SummaryWriter> train_;
  std::unique_ptr<SummaryWriter> validation_;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_TENSORBOARD_H_
