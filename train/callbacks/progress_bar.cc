#include "train/callbacks/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/monotonic_clock.h"

namespace sluice::train::callbacks {
namespace {

// The metrics a line shows, in Keras' order: loss, then the others, then validation ones.
std::string MetricsText(const Logs& logs, bool final) {
  std::string out;
  auto add = [&](const std::string& key, double value) {
    // "nan", as Keras prints it, not printf's "-nan" of a NaN with its sign bit set.
    absl::StrAppend(&out, " - ", key, ": ",
                    std::isnan(value) ? "nan" : absl::StrFormat("%.4f", value));
  };
  for (const std::string prefix : {"", "val_"}) {
    if (!final && !prefix.empty()) continue;
    if (auto v = LogValue(logs, prefix + "loss")) add(prefix + "loss", *v);
    for (const auto& [key, value] : logs) {
      if (!absl::StartsWith(key, prefix)) continue;
      const std::string name = key.substr(prefix.size());
      if (prefix.empty() && absl::StartsWith(key, "val_")) continue;
      if (absl::EndsWith(name, "accuracy")) add(key, value);
    }
  }
  if (final) {
    if (auto v = LogValue(logs, "input_wait_share")) {
      absl::StrAppend(&out, " - input_wait: ", absl::StrFormat("%.1f%%", 100 * *v));
    }
  }
  return out;
}

}  // namespace

ProgressBar::ProgressBar(std::string title, int64_t total_steps, ProgressBarOptions options)
    : title_(std::move(title)), total_(total_steps), options_(std::move(options)) {
  stream_ = options_.stream != nullptr ? options_.stream : stdout;
  interactive_ = options_.interactive.value_or(isatty(fileno(stream_)) != 0);
  start_ = Now();
  if (interactive_) {
    std::fprintf(stream_, "%s\n", title_.c_str());
    std::fflush(stream_);
  }
}

double ProgressBar::Now() const {
  if (options_.clock) return options_.clock();
  return MonotonicSeconds();
}

std::string ProgressBar::FormatDuration(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%d:%02d", s / 60, s % 60);
  return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
}

std::string ProgressBar::Line(int64_t steps, int64_t images, const Logs& logs, bool final) const {
  const double elapsed = Now() - start_;
  const int64_t shown = options_.first_step + steps;  // the epoch's, a resumed one's included
  std::string line;
  if (total_ > 0) {
    const int digits = static_cast<int>(std::to_string(total_).size());
    absl::StrAppend(&line, absl::StrFormat("%*d/%d", digits, shown, total_));
  } else {
    absl::StrAppend(&line, shown, "/unknown");
  }
  if (interactive_ && total_ > 0) {
    const int done =
        static_cast<int>(std::min<int64_t>(options_.width, options_.width * shown / total_));
    std::string bar(options_.width, '.');
    for (int i = 0; i < done; ++i) bar[i] = '=';
    if (done < options_.width && done > 0) bar[done - 1] = '>';
    absl::StrAppend(&line, " [", bar, "]");
  }
  if (final || total_ <= 0 || steps == 0) {
    absl::StrAppend(&line, " - ", FormatDuration(elapsed));
  } else {
    const double eta = elapsed / static_cast<double>(steps) * static_cast<double>(total_ - shown);
    absl::StrAppend(&line, " - ETA: ", FormatDuration(eta));
  }
  // The epoch's own rate once it ends (Fit's "images_per_second"): the elapsed time then includes
  // the validation after the epoch, which is not training.
  const std::optional<double> epoch_rate =
      final ? LogValue(logs, "images_per_second") : std::nullopt;
  if (epoch_rate || elapsed > 0) {
    absl::StrAppend(&line, " - ", absl::StrFormat("%.0f", epoch_rate.value_or(images / elapsed)),
                    " images/s");
  }
  absl::StrAppend(&line, MetricsText(logs, final));
  return line;
}

bool ProgressBar::WantsUpdate() const {
  // A log file gets the epoch's line only.
  return interactive_ && (last_draw_ < 0 || Now() - last_draw_ >= options_.min_redraw_seconds);
}

void ProgressBar::Update(int64_t steps, int64_t images, const Logs& logs) {
  if (!WantsUpdate()) return;
  last_draw_ = Now();
  // \r and clear-to-end-of-line: the bar is redrawn in place and a shorter line leaves no tail.
  std::fprintf(stream_, "\r%s\x1b[K", Line(steps, images, logs, false).c_str());
  std::fflush(stream_);
}

void ProgressBar::Finish(int64_t steps, int64_t images, const Logs& logs) {
  if (interactive_) {
    std::fprintf(stream_, "\r%s\x1b[K\n", Line(steps, images, logs, true).c_str());
  } else {
    std::fprintf(stream_, "%s: %s\n", title_.c_str(), Line(steps, images, logs, true).c_str());
  }
  std::fflush(stream_);
}

}  // namespace sluice::train::callbacks
