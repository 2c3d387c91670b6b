#include "core/runtime.h"

#include <sched.h>

#include <thread>

namespace sluice {

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

// A task arena with one reserved slot would let the calling thread join; we
// reserve none, so `threads` workers run the tasks and callers never block.
Runtime::Runtime(int threads)
    : threads_(threads > 0 ? threads : AvailableCores()), arena_(threads_, 0) {}

void Runtime::Schedule(std::function<void()> fn) { arena_.enqueue(std::move(fn)); }

}  // namespace sluice
