#include "train/callbacks/model_checkpoint.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/callbacks/checkpoint_path.h"

namespace sluice::train::callbacks {

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options)
    : options_(std::move(options)), monitor_(options_.monitor, options_.mode) {}

absl::Status ModelCheckpoint::OnTrainBegin(const Logs& logs) {
  if (options_.path.empty()) return absl::InvalidArgumentError("ModelCheckpoint: empty path");
  if (options_.save_freq < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ModelCheckpoint: save_freq must be >= 0, got ", options_.save_freq));
  }
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::MaybeSave(int64_t epoch, const Logs& logs,
                                        std::optional<int64_t> batch) {
  if (options_.save_best_only) {
    SLUICE_ASSIGN_OR_RETURN(double value, monitor_.Get(logs, "ModelCheckpoint"));
    if (!monitor_.IsImprovement(value)) return absl::OkStatus();
    monitor_.set_best(value);
  }
  SLUICE_ASSIGN_OR_RETURN(
      const std::string path,
      FormatCheckpointPath(options_.path, epoch + 1, logs,
                           batch ? std::optional<int64_t>(*batch + 1) : std::nullopt));
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) {
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error) {
      return absl::PermissionDeniedError(absl::StrCat("ModelCheckpoint: cannot create the folder ",
                                                      folder.string(), " for ", path, ": ",
                                                      error.message()));
    }
  }
  SLUICE_RETURN_IF_ERROR(options_.save_weights_only ? trainer()->SaveWeights(path)
                                                    : trainer()->SaveCheckpoint(path));
  ++saves_;
  last_path_ = path;
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::OnEpochEnd(int64_t epoch, const Logs& logs) {
  // A preempted epoch's model is not that epoch's: BackupAndRestore's backup keeps it.
  if (options_.save_freq != 0 || trainer()->preempting()) return absl::OkStatus();
  return MaybeSave(epoch, logs);
}

bool ModelCheckpoint::MayNeedBatchLogs() const { return options_.save_freq != 0; }

bool ModelCheckpoint::NeedsBatchLogs() const {
  return options_.save_freq != 0 && trainer()->global_step() % options_.save_freq == 0;
}

absl::Status ModelCheckpoint::OnBatchEnd(int64_t batch, const Logs& logs) {
  if (options_.save_freq == 0 || trainer()->global_step() % options_.save_freq != 0) {
    return absl::OkStatus();
  }
  return MaybeSave(trainer()->epoch(), logs, batch);
}

}  // namespace sluice::train::callbacks
