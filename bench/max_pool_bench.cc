// Max pooling, training forward and backward, on the cnn's NHWC shapes: the CPU backend's kernels
// (cpu_max_pool_kernels.h), which keep a NaN and note each maximum's position, against oneDNN's
// pooling_max primitive (with its workspace of argmax positions for the backward), which the
// backend ran before.
//
//   OMP_WAIT_POLICY=passive build/bench/max_pool_bench --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true   (one command line)
//
// Arguments: impl (0 oneDNN, 1 ours), backward (0/1), then N, H, W, C (2 x 2 windows, stride 2).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/dnnl_bench_loop.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "train/backend/cpu/cpu_max_pool_kernels.h"
#include "train/backend/cpu/dnnl_engine.h"

namespace sluice::train::backend::cpu {
namespace {

void BM_MaxPool(benchmark::State& state) {
  const bool ours = state.range(0) == 1, backward = state.range(1) == 1;
  PoolGeometry g;
  g.n = state.range(2), g.h = state.range(3), g.w = state.range(4), g.c = state.range(5);
  g.window_h = g.window_w = g.stride_h = g.stride_w = 2;
  g.oh = g.h / 2, g.ow = g.w / 2;
  std::vector<float> x(g.n * g.h * g.w * g.c), gx(x.size());
  std::vector<float> y(g.n * g.oh * g.ow * g.c), gy(y.size());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 2.0f);
  for (float& v : x) v = u(rng);
  for (float& v : gy) v = u(rng);
  state.SetLabel(std::string(ours ? "sluice" : "oneDNN") + (backward ? " backward" : " forward"));
  if (ours) {
    std::vector<uint16_t> argmax(y.size());
    MaxPoolForwardF32(g, x.data(), y.data(), argmax.data());
    for (auto _ : state) {
      if (backward) {
        MaxPoolBackwardF32(g, argmax.data(), gy.data(), gx.data());
      } else {
        MaxPoolForwardF32(g, x.data(), y.data(), argmax.data());
      }
    }
    return;
  }
  using dnnl::memory;
  const dnnl::engine& engine = CpuEngine();
  dnnl::stream stream(engine);
  const memory::desc src({g.n, g.c, g.h, g.w}, memory::data_type::f32, memory::format_tag::nhwc);
  const memory::desc dst({g.n, g.c, g.oh, g.ow}, memory::data_type::f32, memory::format_tag::nhwc);
  const dnnl::pooling_forward::primitive_desc fwd_pd({dnnl::prop_kind::forward_training,
                                                      dnnl::algorithm::pooling_max,
                                                      src,
                                                      dst,
                                                      {2, 2},
                                                      {2, 2},
                                                      {0, 0},
                                                      {0, 0}},
                                                     engine);
  const dnnl::pooling_backward::primitive_desc bwd_pd(
      {dnnl::algorithm::pooling_max, src, dst, {2, 2}, {2, 2}, {0, 0}, {0, 0}}, engine, fwd_pd);
  const dnnl::pooling_forward fwd(fwd_pd);
  const dnnl::pooling_backward bwd(bwd_pd);
  memory xm(src, engine, x.data()), ym(dst, engine, y.data()), gym(dst, engine, gy.data()),
      gxm(src, engine, gx.data()), workspace(fwd_pd.workspace_desc(), engine);
  const std::unordered_map<int, memory> fwd_args = {
      {DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_WORKSPACE, workspace}};
  const std::unordered_map<int, memory> bwd_args = {
      {DNNL_ARG_DIFF_DST, gym}, {DNNL_ARG_DIFF_SRC, gxm}, {DNNL_ARG_WORKSPACE, workspace}};
  bench::TimeDnnlPair(state, stream, fwd, fwd_args, bwd, bwd_args, backward);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{64, 28, 28, 32}, std::vector<int64_t>{64, 14, 14, 64}}) {
    for (int64_t backward : {0, 1}) {
      for (int64_t impl : {0, 1}) b->Args({impl, backward, shape[0], shape[1], shape[2], shape[3]});
    }
  }
}

BENCHMARK(BM_MaxPool)
    ->Apply(Shapes)
    ->ArgNames({"ours", "bwd", "n", "h", "w", "c"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice::train::backend::cpu

BENCHMARK_MAIN();
