#ifndef SLUICE_TRAIN_CALLBACKS_PROGRESS_BAR_H_
#define SLUICE_TRAIN_CALLBACKS_PROGRESS_BAR_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "train/callbacks/callback.h"

namespace sluice::train::callbacks {

struct ProgressBarOptions {
  std::FILE* stream = nullptr;      // nullptr: stdout
  std::optional<bool> interactive;  // unset: whether `stream` is a terminal (isatty)
  int width = 30;                   // characters of the bar
  double min_redraw_seconds = 0.1;  // a terminal redraws at most this often
  std::function<double()> clock;    // seconds, monotonic; unset: steady_clock (tests fake it)
  // A resumed epoch's steps done before this run: counted as done (the bar and its count go on
  // from them), not timed (the ETA and images/s are of this run's steps).
  int64_t first_step = 0;
};

// Keras-like progress of one epoch. On a terminal, a bar redrawn in place:
//   Epoch 2/5
//    23/100 [======>.......................] - ETA: 3s - 5310 images/s - loss: 0.4123 - accuracy:
//    0.8516
// ending with the epoch's totals and validation metrics. Elsewhere (a log file, CI), one line
// per epoch when it ends:
//   Epoch 2/5: 100/100 - 4s - 5310 images/s - loss: 0.4123 - accuracy: 0.8516 - val_loss: ...
class ProgressBar {
 public:
  // `total_steps` of the epoch, or -1 when not known yet (no bar, no ETA).
  ProgressBar(std::string title, int64_t total_steps, ProgressBarOptions options = {});

  // After a step: `steps` and `images` done so far in the epoch by this run (after first_step),
  // the running metrics.
  void Update(int64_t steps, int64_t images, const Logs& logs);
  // At the epoch's end, with its logs (validation metrics included).
  void Finish(int64_t steps, int64_t images, const Logs& logs);

  bool interactive() const { return interactive_; }
  // Whether Update would draw now: on a terminal, once min_redraw_seconds have passed. Fit reads
  // the running metrics back from the device only then.
  bool WantsUpdate() const;

  // "3s", "1:05", "1:02:03": Keras' ETA format.
  static std::string FormatDuration(double seconds);

 private:
  std::string Line(int64_t steps, int64_t images, const Logs& logs, bool final) const;
  double Now() const;

  std::string title_;
  int64_t total_;
  ProgressBarOptions options_;
  std::FILE* stream_;
  bool interactive_;
  double start_;
  double last_draw_ = -1;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_PROGRESS_BAR_H_
