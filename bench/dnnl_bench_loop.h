#ifndef SLUICE_BENCH_DNNL_BENCH_LOOP_H_
#define SLUICE_BENCH_DNNL_BENCH_LOOP_H_

// The timed loop of the benchmarks that hold a oneDNN primitive pair up against our kernels: the
// forward runs once (the backward reads its workspace), then each iteration runs one of the two
// and waits for it.

#include <benchmark/benchmark.h>

#include <unordered_map>

#include "oneapi/dnnl/dnnl.hpp"

namespace sluice::bench {

inline void TimeDnnlPair(benchmark::State& state, dnnl::stream& stream,
                         const dnnl::primitive& forward,
                         const std::unordered_map<int, dnnl::memory>& forward_args,
                         const dnnl::primitive& backward,
                         const std::unordered_map<int, dnnl::memory>& backward_args,
                         bool time_backward) {
  forward.execute(stream, forward_args);
  stream.wait();
  for (auto _ : state) {
    if (time_backward) {
      backward.execute(stream, backward_args);
    } else {
      forward.execute(stream, forward_args);
    }
    stream.wait();
  }
}

}  // namespace sluice::bench

#endif  // SLUICE_BENCH_DNNL_BENCH_LOOP_H_
