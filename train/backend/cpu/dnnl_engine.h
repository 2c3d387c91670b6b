#ifndef SLUICE_TRAIN_BACKEND_CPU_DNNL_ENGINE_H_
#define SLUICE_TRAIN_BACKEND_CPU_DNNL_ENGINE_H_

#include "oneapi/dnnl/dnnl.hpp"

namespace sluice::train::backend::cpu {

// The process-wide oneDNN CPU engine, created on first use. oneDNN engines
// are thread-safe; streams are not, so the CPU backend keeps one per thread.
const dnnl::engine& CpuEngine();

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_DNNL_ENGINE_H_
