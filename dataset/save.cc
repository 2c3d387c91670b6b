// Dataset::Save(path, options), as tf.data's save: one pass over the dataset into a saved
// dataset directory (dataset/saved_dataset.h). The manifest goes in last, so an error part-way
// leaves the directory as it was.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "dataset/saved_dataset.h"

namespace sluice {

absl::Status Dataset::Save(const std::string& path, SaveOptions options) const {
  auto in_save = [&path](const absl::Status& s) {
    return WithContext(s, absl::StrCat("Save to ", path, ": "));
  };
  absl::StatusOr<proto::SavedDatasetManifest> identity = internal::DescribeSavedInput(*base_, "");
  if (!identity.ok()) return in_save(identity.status());
  absl::StatusOr<std::unique_ptr<internal::SavedDatasetWriter>> writer =
      internal::SavedDatasetWriter::Create(path, std::move(*identity),
                                           {.compression = options.compression,
                                            .num_shards = options.num_shards,
                                            .shard_fn = std::move(options.shard_fn)});
  if (!writer.ok()) return in_save(writer.status());
  std::unique_ptr<Iterator> it = MakeIterator();
  using Clock = std::chrono::steady_clock;
  Clock::time_point next_check = Clock::now();
  while (true) {
    if (options.check && Clock::now() >= next_check) {
      if (absl::Status s = options.check(); !s.ok()) return in_save(s);
      // At most a minute apart: an infinite or NaN interval would overflow the clock.
      const double interval = options.check_interval_seconds;
      const double seconds = std::isnan(interval) ? 0.0 : std::clamp(interval, 0.0, 60.0);
      next_check = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
    }
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    if (!e.ok()) return in_save(e.status());
    if (!e->has_value()) break;
    absl::Status appended = (*writer)->Append(**e);
    if (!appended.ok()) return in_save(appended);
  }
  absl::StatusOr<proto::SavedDatasetManifest> done = (*writer)->Finish();
  return done.ok() ? absl::OkStatus() : in_save(done.status());
}

}  // namespace sluice
