#include "train/backend/cpu/cpu_threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/config.h"
#include "core/mutex.h"
#include "core/runtime.h"
#include "oneapi/tbb/parallel_for.h"
#include "oneapi/tbb/task_arena.h"

namespace sluice::train::backend::cpu {
namespace {

std::atomic<int> configured_threads{0};  // 0: not set, use every core
std::atomic<int> generation{1};          // bumped by SetCpuThreads

struct Arena {
  int threads;
  std::unique_ptr<tbb::task_arena> arena;
};

Mutex arena_mu;
std::shared_ptr<Arena> current_arena ABSL_GUARDED_BY(arena_mu);

[[maybe_unused]] std::shared_ptr<Arena> GetArena() {  // unused under ThreadSanitizer
  MutexLock lock(&arena_mu);
  const int threads = CpuThreads();
  if (!current_arena || current_arena->threads != threads) {
    auto a = std::make_shared<Arena>();
    a->threads = threads;
    a->arena = std::make_unique<tbb::task_arena>(threads);
    current_arena = std::move(a);
  }
  return current_arena;
}

// libdnnl links libgomp, so omp_set_num_threads is already loaded; looking it
// up at run time avoids a link-time dependency on the OpenMP runtime (and is
// a no-op with a oneDNN built on another threading runtime).
using OmpSetNumThreads = void (*)(int);
OmpSetNumThreads OmpSetter() {
  static const OmpSetNumThreads fn =
      reinterpret_cast<OmpSetNumThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return fn;
}

using OmpGetMaxThreads = int (*)();
OmpGetMaxThreads OmpGetter() {
  static const OmpGetMaxThreads fn =
      reinterpret_cast<OmpGetMaxThreads>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  return fn;
}

}  // namespace

void SetCpuThreads(int threads) {
  configured_threads.store(std::max(threads, 0));
  generation.fetch_add(1);
}

int CpuThreads() {
  const int t = configured_threads.load();
  return t > 0 ? t : AvailableCores();
}

void ApplyCpuThreadsToOpenMp() {
  thread_local int applied = 0;
  const int g = generation.load(std::memory_order_relaxed);
  if (applied == g) return;
  applied = g;
  if (OmpSetNumThreads fn = OmpSetter()) fn(CpuThreads());
}

int OpenMpThreads() {
  OmpGetMaxThreads get = OmpGetter();
  return get != nullptr ? get() : 0;
}

OneOpenMpThread::OneOpenMpThread(bool small) : active_(small) {
  if (!active_) return;
  ApplyCpuThreadsToOpenMp();
  previous_ = OpenMpThreads();
  if (OmpSetNumThreads fn = OmpSetter()) fn(1);
}

OneOpenMpThread::~OneOpenMpThread() {
  if (!active_) return;
  if (OmpSetNumThreads fn = OmpSetter()) fn(previous_);
}

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = CpuThreads();
  const int64_t chunks = std::min<int64_t>(threads, n / grain);
  if (chunks < 2) {
    fn(0, n);
    return;
  }
#ifdef ABSL_HAVE_THREAD_SANITIZER
  // ThreadSanitizer cannot see oneTBB's synchronisation (Debian's libtbb is not instrumented),
  // nor tell its reuse of stack memory from a race. Under it the chunks run on threads whose
  // start and join it sees, so it still checks the chunks against each other and the caller.
  std::vector<std::thread> workers;
  for (int64_t c = 1; c < chunks; ++c) {
    workers.emplace_back([&fn, n, c, chunks] { fn(n * c / chunks, n * (c + 1) / chunks); });
  }
  fn(0, n / chunks);
  for (std::thread& w : workers) w.join();
#else
  std::shared_ptr<Arena> arena = GetArena();
  arena->arena->execute([&] {
    tbb::parallel_for(
        int64_t{0}, chunks, [&](int64_t c) { fn(n * c / chunks, n * (c + 1) / chunks); },
        tbb::simple_partitioner());
  });
#endif
}

}  // namespace sluice::train::backend::cpu
