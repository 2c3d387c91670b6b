// Save / Load (the format Snapshot writes and reads) of decoded images: 400 elements of a
// 375x500x3 uint8 image and an int64 label (225 MB), the page cache warm, 2 shards. Figures are
// bytes of image data per second and images per second; the write includes each shard's fsync.
//   build/bench/snapshot_bench [--benchmark_repetitions=3]
#include <unistd.h>

#include <filesystem>
#include <string>

#include "benchmark/benchmark.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"

namespace sluice {
namespace {

constexpr int64_t kImages = 400;
constexpr int64_t kImageBytes = 375 * 500 * 3;

Dataset Images() {
  return Dataset::Range(kImages).Map([](Element e) -> absl::StatusOr<Element> {
    Tensor image(DType::kUint8, Shape{375, 500, 3});
    uint8_t* p = image.data<uint8_t>();
    const int64_t i = e[0].scalar<int64_t>();
    for (int64_t k = 0; k < kImageBytes; ++k) p[k] = static_cast<uint8_t>((k * 7 + i) >> 3);
    return Element{std::move(image), e[0]};
  });
}

std::string Dir(const char* name) {
  return std::filesystem::temp_directory_path().string() + "/sluice_snapshot_bench_" +
         std::to_string(getpid()) + "_" + name;
}

void BM_Save(benchmark::State& state) {
  // The images are made once, in memory, so that only the write is timed.
  static const Dataset images = Images().Cache();
  const std::string dir = Dir("save");
  for (auto _ : state) {
    absl::Status s = images.Save(dir, {.num_shards = 2});
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  std::filesystem::remove_all(dir);
  state.SetBytesProcessed(state.iterations() * kImages * kImageBytes);
  state.SetItemsProcessed(state.iterations() * kImages);
}
BENCHMARK(BM_Save)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

void BM_Load(benchmark::State& state) {
  const std::string dir = Dir("load");
  if (absl::Status s = Images().Save(dir, {.num_shards = 2}); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  const Dataset loaded = Dataset::Load(dir);
  for (auto _ : state) {
    auto it = loaded.MakeIterator();
    int64_t n = 0;
    while (true) {
      auto e = it->GetNext();
      if (!e.ok()) {
        state.SkipWithError(std::string(e.status().message()).c_str());
        break;
      }
      if (!e->has_value()) break;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  std::filesystem::remove_all(dir);
  state.SetBytesProcessed(state.iterations() * kImages * kImageBytes);
  state.SetItemsProcessed(state.iterations() * kImages);
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
