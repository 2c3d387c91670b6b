// Per-element overhead of dataset ops, beside a plain C++ loop doing the same
// work. Each benchmark drains a fresh iterator over kElements int64 scalars;
// `ns_per_element` is time per input element: CPU time of the one thread for
// single-threaded pipelines, wall time for those with a Prefetch (whose CPU
// column then counts every thread of the process). An op's own overhead is its
// pipeline's figure minus Range's; the plain loops are the floor.
//
//   nice -n -19 build-bench/bench/dataset_overhead_bench --benchmark_repetitions=5
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/controller.h"  // kAutotune knobs tuned as in any program that includes it
#include "benchmark/benchmark.h"
#include "core/element.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"

namespace sluice {
namespace {

constexpr int64_t kElements = 1 << 16;
constexpr int64_t kBatch = 32;

void SetCounters(benchmark::State& state, int64_t per_iteration) {
  const double n = static_cast<double>(per_iteration) * static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(n));
  // An inverted rate of n * 1e-9 per second reads as nanoseconds per element
  // (Google Benchmark prints it with an "s" suffix).
  state.counters["ns_per_element"] =
      benchmark::Counter(n * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Drains a fresh iterator of `ds` per benchmark iteration.
void Drain(benchmark::State& state, const Dataset& ds, int64_t input_elements) {
  for (auto _ : state) {
    auto it = ds.MakeIterator();
    int64_t n = 0;
    while (true) {
      auto e = it->GetNext();
      if (!e.ok()) {
        state.SkipWithError(std::string(e.status().message()).c_str());
        return;
      }
      if (!e->has_value()) break;
      benchmark::DoNotOptimize(**e);
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  SetCounters(state, input_elements);
}

// The floor for Range (and Map, Take, Skip, Prefetch): make the same
// elements, int64 scalar tensors, and hand each over.
void BM_PlainLoop_Scalars(benchmark::State& state) {
  for (auto _ : state) {
    for (int64_t i = 0; i < kElements; ++i) {
      std::optional<Element> e(Element{Tensor::Scalar<int64_t>(i)});
      benchmark::DoNotOptimize(*e);
    }
  }
  SetCounters(state, kElements);
}
BENCHMARK(BM_PlainLoop_Scalars);

// The floor for Batch: the same scalars copied into one [32] tensor a batch.
void BM_PlainLoop_Batch32(benchmark::State& state) {
  for (auto _ : state) {
    for (int64_t start = 0; start < kElements; start += kBatch) {
      const int64_t n = std::min(kBatch, kElements - start);
      std::vector<Element> rows;
      rows.reserve(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) rows.push_back(Element{Tensor::Scalar<int64_t>(start + i)});
      Element batch{Tensor(DType::kInt64, Shape{n})};
      for (int64_t i = 0; i < n; ++i) {
        if (!batch[0].CopyIntoRow(i, rows[static_cast<size_t>(i)][0]).ok()) std::abort();
      }
      benchmark::DoNotOptimize(batch);
    }
  }
  SetCounters(state, kElements);
}
BENCHMARK(BM_PlainLoop_Batch32);

void BM_Range(benchmark::State& state) { Drain(state, Dataset::Range(kElements), kElements); }
BENCHMARK(BM_Range);

void BM_Range_Map(benchmark::State& state) {
  Drain(state,
        Dataset::Range(kElements).Map([](Element e) -> absl::StatusOr<Element> { return e; }),
        kElements);
}
BENCHMARK(BM_Range_Map);

// Arg: num_parallel_calls. The hand-off to and from the workers, on top of BM_Range_Map.
void BM_Range_ParallelMap(benchmark::State& state) {
  Drain(state,
        Dataset::Range(kElements).Map([](Element e) -> absl::StatusOr<Element> { return e; },
                                      {.num_parallel_calls = static_cast<int>(state.range(0))}),
        kElements);
}
BENCHMARK(BM_Range_ParallelMap)->Arg(2)->Arg(4)->UseRealTime()->MeasureProcessCPUTime();

// Arg: num_parallel_calls. A parallel Interleave of 4 inner Ranges of small elements, as of
// TFRecord files of small records: the hand-offs between the consumer and the workers, which
// read ahead into per-slot buffers, on top of BM_Range.
void BM_ParallelInterleave_Ranges(benchmark::State& state) {
  constexpr int64_t kCycle = 4;
  Drain(state,
        Dataset::Range(kCycle).Interleave(
            [](Element) -> absl::StatusOr<Dataset> { return Dataset::Range(kElements / kCycle); },
            {.cycle_length = kCycle, .num_parallel_calls = static_cast<int>(state.range(0))}),
        kElements);
}
BENCHMARK(BM_ParallelInterleave_Ranges)->Arg(2)->Arg(4)->UseRealTime()->MeasureProcessCPUTime();

void BM_Range_Batch32(benchmark::State& state) {
  Drain(state, Dataset::Range(kElements).Batch(kBatch), kElements);
}
BENCHMARK(BM_Range_Batch32);

// Arg: buffer size (kAutotune starts at 2).
void BM_Range_Prefetch(benchmark::State& state) {
  Drain(state, Dataset::Range(kElements).Prefetch(state.range(0)), kElements);
}
BENCHMARK(BM_Range_Prefetch)->Arg(kAutotune)->Arg(2)->Arg(8)->Arg(64)->UseRealTime()->MeasureProcessCPUTime();

void BM_Range_Take(benchmark::State& state) {
  Drain(state, Dataset::Range(kElements).Take(kElements), kElements);
}
BENCHMARK(BM_Range_Take);

// Half the input skipped, half passed on: per input element.
void BM_Range_Skip(benchmark::State& state) {
  Drain(state, Dataset::Range(2 * kElements).Skip(kElements), 2 * kElements);
}
BENCHMARK(BM_Range_Skip);

void BM_Range_Map_Batch32_Prefetch(benchmark::State& state) {
  Drain(state,
        Dataset::Range(kElements)
            .Map([](Element e) -> absl::StatusOr<Element> { return e; })
            .Batch(kBatch)
            .Prefetch(kAutotune),
        kElements);
}
BENCHMARK(BM_Range_Map_Batch32_Prefetch)->UseRealTime()->MeasureProcessCPUTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
