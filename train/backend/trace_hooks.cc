#include "train/backend/trace_hooks.h"

#include <utility>

namespace sluice::train::backend {
namespace {
thread_local Backend* tracing_backend = nullptr;
thread_local SeedSource next_dropout_seed;
}  // namespace

bool Tracing() { return tracing_backend != nullptr; }

void SetNextDropoutSeedSource(SeedSource source) {
  if (Tracing()) next_dropout_seed = std::move(source);
}

ScopedTracingBackend::ScopedTracingBackend(Backend* backend) : previous_(tracing_backend) {
  tracing_backend = backend;
}

ScopedTracingBackend::~ScopedTracingBackend() {
  tracing_backend = previous_;
  next_dropout_seed = nullptr;
}

namespace internal {
Backend* TracingBackend() { return tracing_backend; }
SeedSource TakeNextDropoutSeedSource() { return std::exchange(next_dropout_seed, nullptr); }
}  // namespace internal

}  // namespace sluice::train::backend
