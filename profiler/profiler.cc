#include "profiler/profiler.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "io/atomic_file.h"
#include "profiler/trace_json.h"
#include "profiler/trace_summary.h"

namespace sluice::profiler {
namespace {

// Start and Stop: one profile at a time.
Mutex mu;
bool started ABSL_GUARDED_BY(mu) = false;
ProfilerOptions options ABSL_GUARDED_BY(mu);
std::string directory ABSL_GUARDED_BY(mu);

std::string HostName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  return host;
}

std::string TimeRunName() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y_%m_%d_%H_%M_%S", &tm);
  return buf;
}

absl::Status CreateDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("profiler: cannot create ", dir, ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Start(const std::string& dir, ProfilerOptions opts) {
  if (dir.empty()) return absl::InvalidArgumentError("profiler::Start: empty directory");
  if (opts.events_per_thread < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profiler::Start: events_per_thread must be >= 1, got ", opts.events_per_thread));
  }
  MutexLock lock(&mu);
  if (started) {
    return absl::FailedPreconditionError(
        absl::StrCat("profiler::Start(", dir, "): already recording into ", directory));
  }
  // Fail now rather than after the run when the folder cannot be made.
  SLUICE_RETURN_IF_ERROR(CreateDirectories(dir));
  if (opts.run_name.empty()) opts.run_name = TimeRunName();
  options = opts;
  directory = dir;
  started = true;
  BeginRecording(opts.events_per_thread, opts.counter_interval_ms);
  return absl::OkStatus();
}

absl::StatusOr<Report> Stop() {
  MutexLock lock(&mu);
  if (!started) return absl::FailedPreconditionError("profiler::Stop: not recording");
  started = false;
  Report report;
  const std::vector<ThreadTrace> threads = EndRecording(&report.dropped);
  for (const ThreadTrace& t : threads) report.events += static_cast<int64_t>(t.events.size());
  const std::string json = TraceJson(threads, static_cast<int64_t>(getpid()));
  report.trace_path = directory + "/trace.json";
  SLUICE_RETURN_IF_ERROR(WriteFileAtomically(report.trace_path, json));
  const std::string run_dir = absl::StrCat(directory, "/plugins/profile/", options.run_name);
  SLUICE_RETURN_IF_ERROR(CreateDirectories(run_dir));
  report.tensorboard_path = absl::StrCat(run_dir, "/", HostName(), ".trace.json.gz");
  SLUICE_ASSIGN_OR_RETURN(std::string gz, Gzip(json));
  SLUICE_RETURN_IF_ERROR(WriteFileAtomically(report.tensorboard_path, gz));
  report.summary = Summarize(threads, report.dropped);
  SLUICE_RETURN_IF_ERROR(WriteFileAtomically(directory + "/summary.txt", report.summary));
  return report;
}

}  // namespace sluice::profiler
