#include "train/backend/trace_hooks.h"

#include <utility>

namespace sluice::train::backend {
namespace {
thread_local Backend* tracing_backend = nullptr;
thread_local SeedSource next_dropout_seed;
thread_local CheckRecorder* check_recorder = nullptr;
}  // namespace

bool Tracing() { return tracing_backend != nullptr; }

void SetNextDropoutSeedSource(SeedSource source) {
  if (Tracing()) next_dropout_seed = std::move(source);
}

absl::Status CheckAtEveryReplay(const char* name, const Tensor& t, TensorCheck check) {
  if (Tracing() && check_recorder != nullptr) {
    return check_recorder->RecordCheck(name, t, std::move(check));
  }
  return check(t);
}

void AtEveryCall(std::function<void()> fn) {
  fn();
  if (Tracing() && check_recorder != nullptr) check_recorder->RecordAtEveryCall(std::move(fn));
}

ScopedTracingBackend::ScopedTracingBackend(Backend* backend, CheckRecorder* checks)
    : previous_(tracing_backend),
      previous_checks_(check_recorder),
      previous_seed_(std::exchange(next_dropout_seed, nullptr)) {
  tracing_backend = backend;
  check_recorder = checks;
}

ScopedTracingBackend::~ScopedTracingBackend() {
  tracing_backend = previous_;
  check_recorder = previous_checks_;
  next_dropout_seed = std::move(previous_seed_);
}

namespace internal {
Backend* TracingBackend() { return tracing_backend; }
SeedSource TakeNextDropoutSeedSource() { return std::exchange(next_dropout_seed, nullptr); }
}  // namespace internal

}  // namespace sluice::train::backend
