#include "train/fit/profile_window.h"

#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "profiler/profiler.h"

namespace sluice::train::fit {

ProfileWindow::ProfileWindow(std::optional<std::pair<int64_t, int64_t>> steps, std::string dir,
                             std::FILE* report_to)
    : steps_(steps), dir_(std::move(dir)), report_to_(report_to) {}

ProfileWindow::~ProfileWindow() {
  if (recording_) profiler::Stop().IgnoreError();
}

absl::Status ProfileWindow::BeforeStep(int64_t next_step) {
  if (first_step_ < 0) first_step_ = next_step;
  if (!steps_ || recording_ || next_step != steps_->first) return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(WithContext(profiler::Start(dir_), "Fit: profile_steps: "));
  recording_ = true;
  opened_ = true;
  return absl::OkStatus();
}

absl::Status ProfileWindow::AfterStep(int64_t step, bool fit_ends) {
  if (fit_ends && steps_ && !opened_ && steps_->first > step && report_to_ != nullptr) {
    // The window lies past this Fit's last step: asked for, and nothing to show for it. (One
    // before this Fit's first step was another Fit's, a resumed run's earlier part or a head
    // phase's: not this one's to report.)
    const std::string trained = first_step_ < 0 ? "none" : absl::StrCat(first_step_, " to ", step);
    std::fprintf(report_to_, "profile_steps %lld:%lld: not profiled; the steps this Fit ran: %s\n",
                 static_cast<long long>(steps_->first), static_cast<long long>(steps_->second),
                 trained.c_str());
  }
  if (!recording_ || (!fit_ends && step < steps_->second)) return absl::OkStatus();
  recording_ = false;
  if (step < steps_->second && report_to_ != nullptr) {
    // Fit ended inside the window: the profile is of fewer steps than asked for.
    std::fprintf(report_to_,
                 "profile_steps %lld:%lld: steps %lld to %lld not profiled; this Fit ended at "
                 "step %lld\n",
                 static_cast<long long>(steps_->first), static_cast<long long>(steps_->second),
                 static_cast<long long>(step) + 1, static_cast<long long>(steps_->second),
                 static_cast<long long>(step));
  }
  absl::StatusOr<profiler::Report> report = profiler::Stop();
  SLUICE_RETURN_IF_ERROR(WithContext(report.status(), "Fit: profile_steps: "));
  if (report_to_ != nullptr) {
    std::fprintf(report_to_, "%s(trace: %s; TensorBoard: %s)\n", report->summary.c_str(),
                 report->trace_path.c_str(), report->tensorboard_path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
