#include "train/backend/cpu/dnnl_primitive_cache.h"

#include "core/mutex.h"

namespace sluice::train::backend::cpu {

DnnlPrimitiveCache& DnnlPrimitiveCache::Global() {
  static DnnlPrimitiveCache* cache = new DnnlPrimitiveCache();
  return *cache;
}

std::shared_ptr<const void> DnnlPrimitiveCache::Find(const std::string& key) {
  MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.value;
}

std::shared_ptr<const void> DnnlPrimitiveCache::Insert(const std::string& key,
                                                       std::shared_ptr<const void> value) {
  MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second.value;  // another thread built it first
  lru_.push_front(key);
  entries_.emplace(key, Entry{value, lru_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  return value;
}

size_t DnnlPrimitiveCache::size() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

int64_t DnnlPrimitiveCache::hits() const {
  MutexLock lock(&mu_);
  return hits_;
}

int64_t DnnlPrimitiveCache::misses() const {
  MutexLock lock(&mu_);
  return misses_;
}

}  // namespace sluice::train::backend::cpu
