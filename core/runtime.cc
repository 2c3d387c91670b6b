#include "core/runtime.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/config.h"
#include "core/tsan_annotations.h"
#include "oneapi/tbb/global_control.h"
#include "oneapi/tbb/task_scheduler_observer.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

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

namespace {

// A worker's first task or arena entry names its thread (a system call, once per thread).
void NameThisWorker() {
  thread_local bool named = false;
  if (!named) {
    pthread_setname_np(pthread_self(), "worker");
    named = true;
  }
}

// Names oneTBB's workers that join the default arena (where the CPU backend's parallel loops
// run): a profile or a debugger shows "worker" rather than the program's name, which threads
// inherit. Runtime's own arenas name theirs in Schedule (an observer of an arena leaves a block
// of oneTBB's behind when the arena goes).
class WorkerNamer : public tbb::task_scheduler_observer {
 public:
  WorkerNamer() { observe(true); }
  void on_scheduler_entry(bool worker) override {
    if (worker) NameThisWorker();
  }
};

// oneTBB starts at most (max_allowed_parallelism - 1) workers in the whole
// process, and the default assumes the main thread works too: on 2 cores that
// is one worker. Our arenas reserve no slot for callers (the consumer thread
// only waits), so allow enough workers for every arena's budget; each arena's
// own concurrency still bounds what runs at once.
void AllowWorkers() {
  static std::once_flag once;
  static std::unique_ptr<tbb::global_control> control;
  std::call_once(once, [] {
    control = std::make_unique<tbb::global_control>(
        tbb::global_control::max_allowed_parallelism,
        static_cast<size_t>(std::max(256, 4 * AvailableCores())));
    static auto* namer = new WorkerNamer;  // never destroyed: workers may join until exit
    (void)namer;
  });
}

// The Runtime whose task this thread is running, if any (Runtime::OnWorker).
thread_local const Runtime* current_runtime = nullptr;

// Marks the thread as running a task of `runtime` for its lifetime.
class RunningTaskOf {
 public:
  explicit RunningTaskOf(const Runtime* runtime) : outer_(current_runtime) {
    current_runtime = runtime;
  }
  ~RunningTaskOf() { current_runtime = outer_; }
  RunningTaskOf(const RunningTaskOf&) = delete;
  RunningTaskOf& operator=(const RunningTaskOf&) = delete;

 private:
  const Runtime* outer_;
};

}  // namespace

// No slot is reserved for the calling thread: `threads` workers run the tasks
// and callers never join the arena.
Runtime::Runtime(int threads)
    : threads_(threads > 0 ? threads : AvailableCores()), arena_((AllowWorkers(), threads_), 0) {}

void Runtime::Schedule(std::function<void()> fn) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  // The function lives on the heap, published by a release on its address.
  // The task captures only a raw pointer (trivially destroyed), whose copy
  // inside oneTBB is the one read ThreadSanitizer cannot order.
  auto* task = new std::function<void()>(std::move(fn));
  TsanRelease(task);
  arena_.enqueue([this, task] {
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    std::function<void()>* t = task;
    const Runtime* runtime = this;
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    TsanAcquire(t);
    NameThisWorker();
    RunningTaskOf running(runtime);
    (*t)();
    delete t;
  });
#else
  arena_.enqueue([this, fn = std::move(fn)] {
    NameThisWorker();
    RunningTaskOf running(this);
    fn();
  });
#endif
}

bool Runtime::OnWorker() const { return current_runtime == this; }

}  // namespace sluice
