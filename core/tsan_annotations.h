#ifndef SLUICE_CORE_TSAN_ANNOTATIONS_H_
#define SLUICE_CORE_TSAN_ANNOTATIONS_H_

#include "absl/base/config.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace sluice {

// oneTBB comes from Debian, not built with ThreadSanitizer, which therefore cannot see that
// handing a task to oneTBB happens before the task runs, nor that a task's end happens before
// the wait for it returns. These tell it: whatever a thread did before TsanRelease(p) happens
// before whatever another thread does after a later TsanAcquire(p). No-ops in other builds.
inline void TsanRelease(const void* p) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_release(const_cast<void*>(p));
#else
  (void)p;
#endif
}

inline void TsanAcquire(const void* p) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  __tsan_acquire(const_cast<void*>(p));
#else
  (void)p;
#endif
}

}  // namespace sluice

#endif  // SLUICE_CORE_TSAN_ANNOTATIONS_H_
