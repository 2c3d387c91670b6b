// A plugin that calls what a real plugin calls in the program that loads it (the host interface
// of train/backend/plugin.cc: the registries, the broadcast, precision and float32 helpers, the
// profiler's tracks, tensors), so that a program which links the loader but calls none of these
// itself can be shown to hold and export them: train_tests (plugin_test.cc) and the Python
// module (tests/python/test_cuda.py), which makes its symbols global only when it loads a plugin.
#include <vector>

#include "core/tensor.h"
#include "core/trace_recorder.h"
#include "train/backend/backend.h"
#include "train/backend/broadcast.h"
#include "train/backend/compute_precision.h"
#include "train/backend/plugin_config.h"
#include "train/backend/require_float32.h"

namespace {
int checks_passed = 0;
}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* sluice_plugin_abi() { return SLUICE_PLUGIN_ABI; }

__attribute__((visibility("default"))) void sluice_plugin_register() {
  namespace backend = sluice::train::backend;
  const sluice::Tensor x(sluice::DType::kFloat32, sluice::Shape({3, 1}));
  int passed = 0;
  passed +=
      backend::BroadcastStrides(x.shape(), sluice::Shape({3, 4})) == std::vector<int64_t>{1, 0};
  passed += backend::CurrentPrecision() == backend::Precision::kFloat32;
  passed += backend::RequireFloat32(x, "HostInterfaceTest", "x").ok();
  absl::StatusOr<backend::Backend*> cpu = backend::BackendFor(sluice::Device::Cpu());
  passed += cpu.ok() && (*cpu)->device().is_cpu();
  sluice::profiler::RecordTrackSpan("test", "plugin", "register", 0, 1);  // ignored unless active
  checks_passed = passed;
}

// How many of the 4 checks above passed when the plugin registered.
__attribute__((visibility("default"))) int sluice_test_host_interface_checks() {
  return checks_passed;
}

}  // extern "C"
