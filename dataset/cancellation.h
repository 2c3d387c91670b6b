#ifndef SLUICE_DATASET_CANCELLATION_H_
#define SLUICE_DATASET_CANCELLATION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "core/mutex.h"

namespace sluice {

// Cancels every iterator of one pipeline at once. Iterators that block
// (waiting on a buffer, a worker, an input) register a callback that wakes
// them; after Cancel() they return CancelledError.
class CancellationManager {
 public:
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Runs every registered callback once. Idempotent.
  void Cancel() {
    std::map<int64_t, std::function<void()>> callbacks;
    // Taken before the callbacks leave the map, so that a Deregister that
    // misses its callback waits until it has run.
    MutexLock running(&running_mu_);
    {
      MutexLock l(&mu_);
      if (cancelled_.exchange(true)) return;
      callbacks.swap(callbacks_);
    }
    for (auto& [token, cb] : callbacks) cb();
  }

  // Registers `cb`; runs it at once if already cancelled. Returns a token for
  // Deregister.
  int64_t Register(std::function<void()> cb) {
    {
      MutexLock l(&mu_);
      if (!cancelled_) {
        callbacks_.emplace(next_token_, std::move(cb));
        return next_token_++;
      }
    }
    cb();
    return -1;
  }

  // After Deregister returns, the callback is not running and will not run,
  // so its owner may be destroyed. Call it without holding a lock that the
  // callback takes.
  void Deregister(int64_t token) {
    {
      MutexLock l(&mu_);
      if (callbacks_.erase(token) > 0 || !cancelled_) return;
    }
    MutexLock running(&running_mu_);  // Wait for Cancel() to finish.
  }

 private:
  std::atomic<bool> cancelled_{false};
  Mutex mu_;
  Mutex running_mu_;  // Held while Cancel() runs callbacks.
  std::map<int64_t, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
  int64_t next_token_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_CANCELLATION_H_
