#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_THREADS_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_THREADS_H_

#include <cstdint>
#include <functional>

namespace sluice::train::backend::cpu {

// How many threads the CPU training kernels use: our elementwise and
// reduction loops (a oneTBB arena) and oneDNN's primitives (Debian builds
// oneDNN with OpenMP, whose team size is set to match). `threads` <= 0 means
// every available core, the default.
void SetCpuThreads(int threads);
int CpuThreads();

// Makes the OpenMP team of the calling thread match CpuThreads(). OpenMP's
// thread count is a per-thread setting, so each thread that runs oneDNN
// primitives applies it; cheap when already applied.
void ApplyCpuThreadsToOpenMp();

// The calling thread's OpenMP team size (omp_get_max_threads), or 0 where oneDNN does not run on
// OpenMP.
int OpenMpThreads();

// While alive, the calling thread's oneDNN primitives run on one thread: those it creates are
// planned for one (oneDNN bakes the team size into a primitive, so they need their own cache
// keys) and run without an OpenMP parallel region. For kernels too small to repay waking the
// OpenMP team (OpenBLAS also runs small GEMMs on one thread). Scopes nest: each restores the
// team size it found. `small` false leaves the team as it is: the scope of a kernel that may or
// may not be small.
class OneOpenMpThread {
 public:
  explicit OneOpenMpThread(bool small = true);
  ~OneOpenMpThread();
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  bool active_ = false;
  int previous_ = 0;
};

// Runs fn(begin, end) over disjoint chunks covering [0, n), in parallel on the
// kernel arena when n is at least 2 * grain, else inline. Chunks depend only on
// n, grain and CpuThreads(), so a reduction written per chunk is reproducible.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_THREADS_H_
