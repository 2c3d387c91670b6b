
#ifndef SLUICE_TRAIN_BACKEND_CPU_DNNL_PRIMITIVE_CACHE_H_
#define SLUICE_TRAIN_BACKEND_CPU_DNNL_PRIMITIVE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {

// oneDNN primitive descriptors and primitives, built once per key (the op,
// shapes and attributes) and shared by every thread: creating a descriptor
// searches oneDNN's implementations and JIT-compiles a kernel, which costs far
// more than running it on a small batch. Executing a primitive is thread-safe
// in oneDNN; streams are not, so callers bring their own.
//
// Least recently used entries go once `capacity` is exceeded, so a stream of
// changing shapes (the last, short batch of an epoch) cannot grow it without
// bound.
class DnnlPrimitiveCache {
 public:
  explicit DnnlPrimitiveCache(size_t capacity = 512) : capacity_(capacity) {}

  // The process-wide cache the CPU backend uses.
  static DnnlPrimitiveCache& Global();

  // The entry for `key` and the calling thread's OpenMP team size, made by `make` on a miss.
  // `key` must identify the type T too (each op prefixes its own name). The team size is part of
  // the key because oneDNN fixes it in a primitive when it is made: after SetCpuThreads, or
  // inside OneOpenMpThread, a shape gets a primitive of its own rather than one planned for
  // another team (whose filter gradients' bits differ). `make` runs outside the lock, so two
  // threads missing at once may both build; one result is kept.
  template <typename T>
  std::shared_ptr<const T> GetOrCreate(const std::string& key,
                                       const std::function<std::shared_ptr<T>()>& make) {
    const std::string keyed = absl::StrCat(key, "@", OpenMpThreads());
    if (std::shared_ptr<const void> hit = Find(keyed)) {
      return std::static_pointer_cast<const T>(hit);
    }
    std::shared_ptr<const void> made = make();
    return std::static_pointer_cast<const T>(Insert(keyed, std::move(made)));
  }

  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;

 private:
  std::shared_ptr<const void> Find(const std::string& key);
  std::shared_ptr<const void> Insert(const std::string& key, std::shared_ptr<const void> value);

  struct Entry {
    std::shared_ptr<const void> value;
    std::list<std::string>::iterator lru;
  };
  const size_t capacity_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_DNNL_PRIMITIVE_CACHE_H_
