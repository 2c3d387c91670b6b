#include "train/backend/cpu/dnnl_engine.h"

namespace sluice::train::backend::cpu {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

}  // namespace sluice::train::backend::cpu
