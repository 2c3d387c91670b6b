#include "train/callbacks/tensorboard.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::callbacks {

absl::Status TensorBoard::OnTrainBegin(const Logs& logs) {
  if (options_.log_dir.empty()) return absl::InvalidArgumentError("TensorBoard: empty log_dir");
  if (options_.update_freq < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TensorBoard: update_freq must be >= 0, got ", options_.update_freq));
  }
  if (train_ == nullptr) {
    // Every point goes out on the next Flush (at least each epoch), not each write: per-step
    // series would otherwise cost a write(2) a scalar.
    SLUICE_ASSIGN_OR_RETURN(train_, SummaryWriter::Create(absl::StrCat(options_.log_dir, "/train"),
                                                          {.flush_each = false}));
  }
  return absl::OkStatus();
}

absl::Status TensorBoard::OnEpochEnd(int64_t epoch, const Logs& logs) {
  for (const auto& [key, value] : logs) {
    if (absl::StartsWith(key, "val_")) {
      if (validation_ == nullptr) {
        SLUICE_ASSIGN_OR_RETURN(validation_,
                                SummaryWriter::Create(absl::StrCat(options_.log_dir, "/validation"),
                                                      {.flush_each = false}));
      }
      SLUICE_RETURN_IF_ERROR(validation_->Scalar(absl::StrCat("epoch_", key.substr(4)),
                                                 static_cast<float>(value), epoch));
    } else {
      SLUICE_RETURN_IF_ERROR(
          train_->Scalar(absl::StrCat("epoch_", key), static_cast<float>(value), epoch));
    }
  }
  SLUICE_RETURN_IF_ERROR(train_->Flush());
  if (validation_ != nullptr) SLUICE_RETURN_IF_ERROR(validation_->Flush());
  return absl::OkStatus();
}

bool TensorBoard::NeedsBatchLogs() const {
  return options_.update_freq != 0 && trainer()->global_step() % options_.update_freq == 0;
}

absl::Status TensorBoard::OnBatchEnd(int64_t batch, const Logs& logs) {
  const int64_t step = trainer()->global_step();
  if (options_.update_freq == 0 || step % options_.update_freq != 0) return absl::OkStatus();
  for (const auto& [key, value] : logs) {
    SLUICE_RETURN_IF_ERROR(
        train_->Scalar(absl::StrCat("batch_", key), static_cast<float>(value), step));
  }
  return train_->Flush();  // a live TensorBoard sees each update
}

absl::Status TensorBoard::OnTrainEnd(const Logs& logs) {
  SLUICE_RETURN_IF_ERROR(train_->Flush());
  if (validation_ != nullptr) SLUICE_RETURN_IF_ERROR(validation_->Flush());
  return absl::OkStatus();
}

}  // namespace sluice::train::callbacks
