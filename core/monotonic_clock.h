#ifndef SLUICE_CORE_MONOTONIC_CLOCK_H_
#define SLUICE_CORE_MONOTONIC_CLOCK_H_

#include <chrono>

namespace sluice {

// Seconds on the steady clock: for durations (step times, throughput, progress), never dates.
inline double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace sluice

#endif  // SLUICE_CORE_MONOTONIC_CLOCK_H_
