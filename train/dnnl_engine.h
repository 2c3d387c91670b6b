#ifndef SLUICE_TRAIN_DNNL_ENGINE_H_
#define SLUICE_TRAIN_DNNL_ENGINE_H_

#include "oneapi/dnnl/dnnl.hpp"

namespace sluice::train {

// The process-wide oneDNN CPU engine, created on first use. oneDNN engines
// are thread-safe; streams are not, so the CPU backend keeps one per thread.
const dnnl::engine& CpuEngine();

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_DNNL_ENGINE_H_
