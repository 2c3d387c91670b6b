
#ifndef SLUICE_TRAIN_BACKEND_CPU_DNNL_PRIMITIVE_CACHE_H_
#define SLUICE_TRAIN_BACKEND_CPU_DNNL_PRIMITIVE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/mutex.h"

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

  // The entry for `key`, made by `make` on a miss. `key` must identify the
  // type T too (each op prefixes its own name). `make` runs outside the lock,
  // so two threads missing at once may both build; one result is kept.
  template <typename T>
  std::shared_ptr<const T> GetOrCreate(const std::string& key,
                                       const std::function<std::shared_ptr<T>()>& make) {
    if (std::shared_ptr<const void> hit = Find(key)) return std::static_pointer_cast<const T>(hit);
    std::shared_ptr<const void> made = make();
    return std::static_pointer_cast<const T>(Insert(key, std::move(made)));
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
