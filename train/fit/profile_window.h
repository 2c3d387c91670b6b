#ifndef SLUICE_TRAIN_FIT_PROFILE_WINDOW_H_
#define SLUICE_TRAIN_FIT_PROFILE_WINDOW_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace sluice::train::fit {

// Keras' TensorBoard(profile_batch=(from, to)): the profiler records global steps from..to
// (1-based, inclusive) of a Fit into `dir`, and the summary is printed where the progress goes.
class ProfileWindow {
 public:
  // `steps` unset: nothing is profiled. Data-parallel ranks each profile into dir/rank<r>.
  // `report_to`: where the summary goes; nullptr: nowhere.
  ProfileWindow(std::optional<std::pair<int64_t, int64_t>> steps, std::string dir,
                std::FILE* report_to);
  ProfileWindow(const ProfileWindow&) = delete;
  ProfileWindow& operator=(const ProfileWindow&) = delete;
  // A window still open (Fit failed while profiling) is dropped, so that a later Start works.
  ~ProfileWindow();

  // Before global step `next_step` (1-based): starts the profiler when the window opens there.
  absl::Status BeforeStep(int64_t next_step);
  // After global step `step`: stops the profiler and prints its summary when the window closes
  // there, or when `fit_ends`.
  absl::Status AfterStep(int64_t step, bool fit_ends);

 private:
  std::optional<std::pair<int64_t, int64_t>> steps_;
  std::string dir_;
  std::FILE* report_to_;
  bool recording_ = false;
  bool opened_ = false;      // the window opened in this Fit
  int64_t first_step_ = -1;  // the first step this Fit trained; -1: none yet
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_PROFILE_WINDOW_H_
