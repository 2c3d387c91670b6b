#include "train/callbacks/backup_and_restore.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace sluice::train::callbacks {
namespace {

namespace fs = std::filesystem;

constexpr char kPreemptedPayload[] = "sluice.dev/preempted";
constexpr char kPrefix[] = "ckpt-";
constexpr char kSuffix[] = ".ckpt";

// The global step of a backup's file name, or -1 for another file.
int64_t StepOf(const std::string& file_name) {
  if (!absl::StartsWith(file_name, kPrefix) || !absl::EndsWith(file_name, kSuffix)) return -1;
  const std::string digits = file_name.substr(
      sizeof(kPrefix) - 1, file_name.size() - (sizeof(kPrefix) - 1) - (sizeof(kSuffix) - 1));
  int64_t step = -1;
  if (digits.empty() || !absl::SimpleAtoi(digits, &step) || step < 0) return -1;
  return step;
}

// The backups in `dir`, newest (highest step) first; none when it does not exist.
absl::StatusOr<std::vector<std::string>> BackupsIn(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  if (!fs::exists(dir, error)) return std::vector<std::string>{};
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const int64_t step = StepOf(entry.path().filename().string());
    if (step >= 0) found.emplace_back(step, entry.path().string());
  }
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("BackupAndRestore: cannot list ", dir, ": ", error.message()));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<std::string> paths;
  for (auto& [step, path] : found) paths.push_back(std::move(path));
  return paths;
}

}  // namespace

absl::Status Preempted(const std::string& backup, int64_t global_step) {
  absl::Status status = absl::CancelledError(
      absl::StrCat("preempted: SIGTERM received; the backup of global step ", global_step,
                   " is written (", backup, "): run the same command again to resume from it"));
  status.SetPayload(kPreemptedPayload, absl::Cord(backup));
  return status;
}

bool IsPreemption(const absl::Status& status) {
  return status.GetPayload(kPreemptedPayload).has_value();
}

absl::Status DeleteBackups(const std::string& backup_dir) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> backups, BackupsIn(backup_dir));
  for (const std::string& path : backups) {
    std::error_code error;
    // Data-parallel ranks may delete the same shared folder's files: one already gone is fine.
    fs::remove(path, error);
    if (error && error != std::errc::no_such_file_or_directory) {
      return absl::PermissionDeniedError(
          absl::StrCat("BackupAndRestore: cannot delete ", path, ": ", error.message()));
    }
  }
  return absl::OkStatus();
}

BackupAndRestore::BackupAndRestore(BackupAndRestoreOptions options)
    : options_(std::move(options)) {}

absl::Status BackupAndRestore::CheckOptions() const {
  if (options_.backup_dir.empty()) {
    return absl::InvalidArgumentError("BackupAndRestore: backup_dir is empty");
  }
  if (options_.save_freq < 0 || options_.keep < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BackupAndRestore: save_freq must be >= 0 and keep >= 1, got ",
                     options_.save_freq, " and ", options_.keep));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> BackupAndRestore::Backups() const {
  return BackupsIn(options_.backup_dir);
}

absl::StatusOr<std::vector<std::string>> BackupAndRestore::CheckpointsToResume() {
  SLUICE_RETURN_IF_ERROR(CheckOptions());
  return Backups();
}

absl::Status BackupAndRestore::OnTrainBegin(const Logs& logs) {
  SLUICE_RETURN_IF_ERROR(CheckOptions());
  std::error_code error;
  fs::create_directories(options_.backup_dir, error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat("BackupAndRestore: cannot create ",
                                                    options_.backup_dir, ": ", error.message()));
  }
  if (options_.save_before_preemption) {
    // keep_received: a SIGTERM that came after an earlier Fit's last look (the head phase's last
    // backup, before fine-tuning) still preempts this one, at its first step.
    SLUICE_ASSIGN_OR_RETURN(termination_, TerminationSignal::Install(/*keep_received=*/true));
  }
  // What a write killed half-way left (AtomicFile's temporary files): nothing writes them now.
  for (const fs::directory_entry& entry : fs::directory_iterator(options_.backup_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, kPrefix) && absl::StrContains(name, ".ckpt.tmp.")) {
      fs::remove(entry.path(), error);
    }
  }
  return absl::OkStatus();
}

std::string BackupAndRestore::BackupPath() const {
  return (fs::path(options_.backup_dir) /
          absl::StrFormat("%s%012" PRId64 "%s", kPrefix, trainer()->global_step(), kSuffix))
      .string();
}

absl::Status BackupAndRestore::Save() {
  const int64_t step = trainer()->global_step();
  if (step == last_saved_step_) return absl::OkStatus();  // the epoch's last step saved already
  const std::string path = BackupPath();
  SLUICE_RETURN_IF_ERROR(trainer()->SaveCheckpoint(path));
  ++saves_;
  last_saved_step_ = step;
  // Only once the new backup is whole are the oldest let go. Data-parallel ranks all prune the
  // same shared folder: a file another rank removed first is no error.
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> backups, Backups());
  for (size_t i = static_cast<size_t>(options_.keep); i < backups.size(); ++i) {
    std::error_code ignored;
    fs::remove(backups[i], ignored);
  }
  return absl::OkStatus();
}

absl::Status BackupAndRestore::StopIfPreempted(bool epoch_end) {
  if (termination_ == nullptr) return absl::OkStatus();
  const bool signalled = termination_->received();
  if (!epoch_end && trainer()->replicas() > 1) {
    // Data-parallel, after a step: the ranks agree before the next one, with the agreement each
    // step makes anyway, and stop at this epoch's end (below); a collective of its own here cost
    // the mlp on 2 ranks about 5% of its steps.
    if (signalled) trainer()->StopForPreemption();
    return absl::OkStatus();
  }
  // At an epoch's end, data-parallel, a collective: the stop agreed, or a SIGTERM in the epoch's
  // last step or its validation on any rank.
  SLUICE_ASSIGN_OR_RETURN(const bool preempted,
                          trainer()->AnyReplica(signalled || trainer()->preempting()));
  if (!preempted) return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(Save());
  termination_->Consume();  // acted on: a later Fit's watch starts clean
  termination_.reset();     // a next SIGTERM ends the process as it would have
  return Preempted(BackupPath(), trainer()->global_step());
}

absl::Status BackupAndRestore::OnEpochEnd(int64_t epoch, const Logs& logs) {
  // A SIGTERM during the epoch's validation: the epoch's backup, then the stop.
  SLUICE_RETURN_IF_ERROR(StopIfPreempted(/*epoch_end=*/true));
  return options_.save_freq == 0 ? Save() : absl::OkStatus();
}

absl::Status BackupAndRestore::OnBatchEnd(int64_t batch, const Logs& logs) {
  SLUICE_RETURN_IF_ERROR(StopIfPreempted(/*epoch_end=*/false));
  if (options_.save_freq == 0 || trainer()->global_step() % options_.save_freq != 0) {
    return absl::OkStatus();
  }
  return Save();
}

void BackupAndRestore::OnTrainAborted(const absl::Status& error) {
  termination_.reset();  // a SIGTERM after a failed Fit ends the process, as without Fit
}

absl::Status BackupAndRestore::OnTrainEnd(const Logs& logs) {
  termination_.reset();
  if (!options_.delete_checkpoint) return absl::OkStatus();
  return DeleteBackups(options_.backup_dir);
}

}  // namespace sluice::train::callbacks
