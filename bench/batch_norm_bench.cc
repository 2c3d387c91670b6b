// Batch norm with its fused ReLU, training forward and backward, on resnet-20's NHWC shapes: the
// CPU backend's kernels (cpu_batch_norm_kernels.h) against oneDNN 2.6's batch normalisation
// primitive (fuse_norm_relu), which the backend ran before, on float32 and bfloat16 data.
//
//   OMP_WAIT_POLICY=passive build/bench/batch_norm_bench --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true   (one command line)
//
// Arguments: impl (0 oneDNN, 1 ours), bfloat16 (0/1), backward (0/1), then N, H, W, C.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "bench/dnnl_bench_loop.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/bfloat16_convert.h"
#include "train/backend/cpu/cpu_batch_norm_kernels.h"
#include "train/backend/cpu/dnnl_engine.h"

namespace sluice::train::backend::cpu {
namespace {

constexpr float kEpsilon = 1e-3f;

struct Data {
  int64_t m, c;
  std::vector<float> x, g, y, gx;           // float32 data
  std::vector<uint16_t> xb, gb16, yb, gxb;  // bfloat16 data
  std::vector<float> gamma, beta, mean, variance, grad_gamma, grad_beta;
  std::vector<uint8_t> mask;
};

Data MakeData(int64_t n, int64_t h, int64_t w, int64_t c) {
  Data d;
  d.m = n * h * w;
  d.c = c;
  const int64_t size = d.m * c;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 2.0f);
  d.x.resize(size);
  d.g.resize(size);
  for (float& v : d.x) v = u(rng);
  for (float& v : d.g) v = u(rng);
  d.y.resize(size);
  d.gx.resize(size);
  d.xb.resize(size);
  d.gb16.resize(size);
  d.yb.resize(size);
  d.gxb.resize(size);
  FloatToBFloat16(d.x.data(), d.xb.data(), size);
  FloatToBFloat16(d.g.data(), d.gb16.data(), size);
  d.gamma.assign(c, 1.2f);
  d.beta.assign(c, 0.1f);
  d.mean.resize(c);
  d.variance.resize(c);
  d.grad_gamma.resize(c);
  d.grad_beta.resize(c);
  d.mask.resize(size);
  return d;
}

void BM_BatchNormRelu(benchmark::State& state) {
  const bool ours = state.range(0) == 1, bf16 = state.range(1) == 1, backward = state.range(2) == 1;
  const int64_t n = state.range(3), h = state.range(4), w = state.range(5), c = state.range(6);
  if (bf16 && !CpuHasAvx512Bf16()) {
    state.SkipWithError("bfloat16 needs AVX512-BF16");
    return;
  }
  Data d = MakeData(n, h, w, c);
  state.SetLabel(std::string(ours ? "sluice" : "oneDNN") + (bf16 ? " bf16" : " f32") +
                 (backward ? " backward" : " forward"));
  if (ours) {
    BatchNormTrainingF32(d.x.data(), d.m, c, d.gamma.data(), d.beta.data(), kEpsilon, d.y.data(),
                         d.mean.data(), d.variance.data(), d.mask.data());
    for (auto _ : state) {
      if (bf16 && !backward) {
        BatchNormTrainingBF16(d.xb.data(), d.m, c, d.gamma.data(), d.beta.data(), kEpsilon,
                              d.yb.data(), d.mean.data(), d.variance.data(), d.mask.data());
      } else if (bf16) {
        BatchNormBackwardBF16(d.xb.data(), d.gb16.data(), d.mask.data(), d.m, c, d.gamma.data(),
                              d.mean.data(), d.variance.data(), kEpsilon, false, d.gxb.data(),
                              d.grad_gamma.data(), d.grad_beta.data());
      } else if (!backward) {
        BatchNormTrainingF32(d.x.data(), d.m, c, d.gamma.data(), d.beta.data(), kEpsilon,
                             d.y.data(), d.mean.data(), d.variance.data(), d.mask.data());
      } else {
        BatchNormBackwardF32(d.x.data(), d.g.data(), d.mask.data(), d.m, c, d.gamma.data(),
                             d.mean.data(), d.variance.data(), kEpsilon, false, d.gx.data(),
                             d.grad_gamma.data(), d.grad_beta.data());
      }
    }
    return;
  }
  using dnnl::memory;
  const dnnl::engine& engine = CpuEngine();
  dnnl::stream stream(engine);
  const memory::desc data({n, c, h, w}, bf16 ? memory::data_type::bf16 : memory::data_type::f32,
                          memory::format_tag::nhwc);
  const memory::desc stat({c}, memory::data_type::f32, memory::format_tag::a);
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift |
                     dnnl::normalization_flags::fuse_norm_relu;
  const dnnl::batch_normalization_forward::primitive_desc fwd_pd(
      {dnnl::prop_kind::forward_training, data, kEpsilon, flags}, engine);
  const dnnl::batch_normalization_backward::primitive_desc bwd_pd(
      {dnnl::prop_kind::backward, data, data, kEpsilon, flags}, engine, fwd_pd);
  const dnnl::batch_normalization_forward fwd(fwd_pd);
  const dnnl::batch_normalization_backward bwd(bwd_pd);
  auto at = [&](auto& f32, auto& b16) {
    return bf16 ? static_cast<void*>(b16.data()) : static_cast<void*>(f32.data());
  };
  memory x(data, engine, at(d.x, d.xb)), y(data, engine, at(d.y, d.yb)),
      g(data, engine, at(d.g, d.gb16)), gx(data, engine, at(d.gx, d.gxb));
  memory gamma(stat, engine, d.gamma.data()), beta(stat, engine, d.beta.data()),
      mean(stat, engine, d.mean.data()), variance(stat, engine, d.variance.data()),
      grad_gamma(stat, engine, d.grad_gamma.data()), grad_beta(stat, engine, d.grad_beta.data());
  memory workspace(fwd_pd.workspace_desc(), engine);
  const std::unordered_map<int, memory> fwd_args = {{DNNL_ARG_SRC, x},
                                                    {DNNL_ARG_DST, y},
                                                    {DNNL_ARG_SCALE, gamma},
                                                    {DNNL_ARG_SHIFT, beta},
                                                    {DNNL_ARG_MEAN, mean},
                                                    {DNNL_ARG_VARIANCE, variance},
                                                    {DNNL_ARG_WORKSPACE, workspace}};
  const std::unordered_map<int, memory> bwd_args = {{DNNL_ARG_SRC, x},
                                                    {DNNL_ARG_DIFF_DST, g},
                                                    {DNNL_ARG_DIFF_SRC, gx},
                                                    {DNNL_ARG_SCALE, gamma},
                                                    {DNNL_ARG_SHIFT, gamma},
                                                    {DNNL_ARG_MEAN, mean},
                                                    {DNNL_ARG_VARIANCE, variance},
                                                    {DNNL_ARG_DIFF_SCALE, grad_gamma},
                                                    {DNNL_ARG_DIFF_SHIFT, grad_beta},
                                                    {DNNL_ARG_WORKSPACE, workspace}};
  bench::TimeDnnlPair(state, stream, fwd, fwd_args, bwd, bwd_args, backward);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{64, 28, 28, 16}, {64, 14, 14, 32}, {64, 7, 7, 64}}) {
    for (int64_t bf16 : {0, 1}) {
      for (int64_t backward : {0, 1}) {
        for (int64_t impl : {0, 1}) {
          b->Args({impl, bf16, backward, shape[0], shape[1], shape[2], shape[3]});
        }
      }
    }
  }
}

BENCHMARK(BM_BatchNormRelu)
    ->ArgNames({"ours", "bf16", "bwd", "n", "h", "w", "c"})
    ->Apply(Shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice::train::backend::cpu

BENCHMARK_MAIN();
