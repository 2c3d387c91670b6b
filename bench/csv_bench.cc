// Dataset::Csv throughput on a numeric CSV (the goal: 200 MB/s per core): 200,000 records
// of an int64 id and 8 float32 columns (about 13 MB), page-cached, read by one thread. Figures are
// bytes of CSV per second.
//   build/bench/csv_bench [--benchmark_repetitions=3]
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"

namespace sluice {
namespace {

constexpr int kColumns = 8;

const std::string& CsvFile() {
  static const std::string* path = [] {
    auto* p = new std::string(std::filesystem::temp_directory_path().string() +
                              "/sluice_csv_bench_" + std::to_string(getpid()) + ".csv");
    std::ofstream out(*p);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-100, 100);
    out << "id";
    for (int c = 0; c < kColumns; ++c) out << ",f" << c;
    out << "\n";
    char buf[32];
    for (int i = 0; i < 200000; ++i) {
      out << i;
      for (int c = 0; c < kColumns; ++c) {
        std::snprintf(buf, sizeof(buf), ",%.4f", u(rng));
        out << buf;
      }
      out << "\n";
    }
    std::atexit([] { std::filesystem::remove(CsvFile()); });
    return p;
  }();
  return *path;
}

std::vector<Tensor> Defaults() {
  std::vector<Tensor> d = {Tensor(DType::kInt64, Shape{0})};
  for (int c = 0; c < kColumns; ++c) d.push_back(Tensor::Scalar<float>(0));
  return d;
}

void Drain(benchmark::State& state, const Dataset& ds) {
  const int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(CsvFile()));
  for (auto _ : state) {
    auto it = ds.MakeIterator();
    int64_t n = 0;
    while (true) {
      auto next = it->GetNext();
      if (!next.ok()) state.SkipWithError(std::string(next.status().message()).c_str());
      if (!next.ok() || !*next) break;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

// One element per record: Csv as a pipeline sees it.
void BM_Csv(benchmark::State& state) {
  Drain(state, Dataset::Csv({CsvFile()}, Defaults(), {.header = true}));
}
BENCHMARK(BM_Csv)->Unit(benchmark::kMillisecond);

// The lines alone (TextLine): what reading costs before parsing.
void BM_TextLine(benchmark::State& state) {
  Drain(state, Dataset::TextLine(CsvFile(), {.skip_header_lines = 1}));
}
BENCHMARK(BM_TextLine)->Unit(benchmark::kMillisecond);

// Batched by 1,024, as training reads it.
void BM_CsvBatched(benchmark::State& state) {
  Drain(state, Dataset::Csv({CsvFile()}, Defaults(), {.header = true}).Batch(1024));
}
BENCHMARK(BM_CsvBatched)->Unit(benchmark::kMillisecond);

// CsvOptions::batch_size 1,024: the same batches, parsed straight into the columns.
void BM_CsvBatchSize(benchmark::State& state) {
  Drain(state, Dataset::Csv({CsvFile()}, Defaults(), {.header = true, .batch_size = 1024}));
}
BENCHMARK(BM_CsvBatchSize)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
