#ifndef SLUICE_CORE_RUNTIME_H_
#define SLUICE_CORE_RUNTIME_H_

#include <functional>
#include <memory>

#include "oneapi/tbb/task_arena.h"

namespace sluice {

// A oneTBB arena with a thread budget: the CPU work of one pipeline runs
// here. Tasks must not block waiting on other tasks (long-lived producers run
// on threads of their own).
class Runtime {
 public:
  // `threads` <= 0 means all cores.
  explicit Runtime(int threads = 0);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int num_threads() const { return threads_; }
  // Runs `fn` on a worker of this arena, asynchronously. `fn` must keep alive
  // whatever it touches: the caller may be gone when it runs.
  void Schedule(std::function<void()> fn);
  // Whether the calling thread is running one of this arena's tasks. Such a thread must not
  // wait for another task of the arena to run: with every worker waiting, none would start.
  bool OnWorker() const;

 private:
  int threads_;
  tbb::task_arena arena_;
};

// Cores available to this process (affinity mask aware).
int AvailableCores();

}  // namespace sluice

#endif  // SLUICE_CORE_RUNTIME_H_
