#include "core/termination_signal.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// Lock-free, so safe to touch from a signal handler.
std::atomic<bool> installed{false};
std::atomic<bool> received_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free);
struct sigaction previous;  // written only while no handler of ours is installed

void OnTerminate(int) {
  received_flag.store(true, std::memory_order_relaxed);
  // The next SIGTERM gets what the process had before (SA_RESETHAND would give it SIG_DFL even
  // where a program had its own handler).
  sigaction(SIGTERM, &previous, nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TerminationSignal>> TerminationSignal::Install(bool keep_received) {
  if (installed.exchange(true)) {
    return absl::FailedPreconditionError(
        "TerminationSignal: SIGTERM is already watched (one watch per process)");
  }
  if (keep_received && received_flag.load()) {
    return std::unique_ptr<TerminationSignal>(new TerminationSignal(/*handling=*/false));
  }
  received_flag.store(false);
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = &OnTerminate;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking reads go on; the flag is polled between steps
  if (sigaction(SIGTERM, &action, &previous) != 0) {
    const int error = errno;
    installed.store(false);
    return absl::ErrnoToStatus(error, "TerminationSignal: cannot handle SIGTERM");
  }
  return std::unique_ptr<TerminationSignal>(new TerminationSignal(/*handling=*/true));
}

TerminationSignal::~TerminationSignal() {
  if (!released_) Release();
}

bool TerminationSignal::Release() {
  if (released_) return received();
  released_ = true;
  // A SIGTERM that arrived resets the disposition itself; restoring it again is harmless.
  if (handling_) sigaction(SIGTERM, &previous, nullptr);
  installed.store(false);
  return received();
}

void TerminationSignal::Consume() { received_flag.store(false); }

bool TerminationSignal::received() const { return received_flag.load(std::memory_order_relaxed); }

}  // namespace sluice
