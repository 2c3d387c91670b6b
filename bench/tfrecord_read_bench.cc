// Sequential TFRecord read throughput against `cat`, on a page-cached ~256 MB file of 64 KiB
// random records (written once to $TMPDIR or /tmp, then reused); and the per-record cost on
// ~116 MB of 100-byte records.
//
//   build*/bench/tfrecord_read_bench --benchmark_repetitions=5
//
// Prints the bytes/s of each and, at the end, the ratio reader / cat (medians when repeated).

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "io/tfrecord_reader.h"
#include "io/tfrecord_writer.h"

namespace sluice {
namespace {

constexpr size_t kRecordSize = 64 << 10;
constexpr int kNumRecords = 4096;  // 256 MiB of data.
constexpr uint64_t kFileSize = uint64_t{kNumRecords} * (kRecordSize + 16);

const std::string& BenchFile() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    return absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/sluice_tfrecord_read_bench_", kNumRecords,
                        "x", kRecordSize, ".tfrecord");
  }();
  return path;
}

// Writes the file unless a complete one is already there, then reads it once to cache it.
bool PrepareFile() {
  const std::string& path = BenchFile();
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) != kFileSize) {
    std::fprintf(stderr, "writing %s\n", path.c_str());
    std::mt19937_64 rng(1);
    std::string pool(4 << 20, '\0');
    for (char& c : pool) c = static_cast<char>(rng());
    auto writer = TFRecordWriter::Open(path, {.sync = false});
    if (!writer.ok()) {
      std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
      return false;
    }
    for (int i = 0; i < kNumRecords; ++i) {
      const size_t start = rng() % (pool.size() - kRecordSize);
      if (!(*writer)->Write(absl::string_view(pool).substr(start, kRecordSize)).ok()) return false;
    }
    if (!(*writer)->Close().ok()) return false;
  }
  return std::system(absl::StrCat("cat '", path, "' > /dev/null").c_str()) == 0;
}

double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// CPU time (user + system) of the children waited for so far: `cat` and its shell.
double ChildrenCpuSeconds() {
  rusage r;
  getrusage(RUSAGE_CHILDREN, &r);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return seconds(r.ru_utime) + seconds(r.ru_stime);
}

// Bytes per CPU-second: robust to other processes sharing the cores, unlike wall time.
void SetCpuRate(benchmark::State& state, int64_t bytes, double cpu_seconds) {
  if (cpu_seconds > 0) state.counters["cpu_bytes_per_second"] = bytes / cpu_seconds;
}

void ReadAll(benchmark::State& state, bool verify_crc) {
  std::string record;
  int64_t bytes = 0;
  const double cpu_start = ThreadCpuSeconds();
  for (auto _ : state) {
    auto reader = TFRecordReader::Open(BenchFile(), {.verify_crc = verify_crc});
    if (!reader.ok()) {
      state.SkipWithError(reader.status().ToString().c_str());
      return;
    }
    while (true) {
      absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
      if (!more.ok()) {
        state.SkipWithError(more.status().ToString().c_str());
        return;
      }
      if (!*more) break;
    }
    if ((*reader)->records_read() != kNumRecords) {
      state.SkipWithError("wrong record count");
      return;
    }
    bytes += static_cast<int64_t>(kFileSize);
  }
  state.SetBytesProcessed(bytes);
  SetCpuRate(state, bytes, ThreadCpuSeconds() - cpu_start);
}

void BM_ReaderWithCrc(benchmark::State& state) { ReadAll(state, true); }
void BM_ReaderNoCrc(benchmark::State& state) { ReadAll(state, false); }

void BM_Cat(benchmark::State& state) {
  const std::string command = absl::StrCat("cat '", BenchFile(), "' > /dev/null");
  int64_t bytes = 0;
  const double cpu_start = ChildrenCpuSeconds();
  for (auto _ : state) {
    if (std::system(command.c_str()) != 0) {
      state.SkipWithError("cat failed");
      return;
    }
    bytes += static_cast<int64_t>(kFileSize);
  }
  state.SetBytesProcessed(bytes);
  SetCpuRate(state, bytes, ChildrenCpuSeconds() - cpu_start);
}

// Small records (~100 bytes, a typical tf.train.Example of scalars): the per-record cost.
constexpr int kSmallRecords = 1 << 20;
constexpr size_t kSmallRecordSize = 100;

const std::string& SmallFile() {
  static const std::string path = BenchFile() + ".small";
  return path;
}

bool PrepareSmallFile() {
  std::error_code ec;
  if (std::filesystem::file_size(SmallFile(), ec) ==
      uint64_t{kSmallRecords} * (kSmallRecordSize + 16)) {
    return true;
  }
  auto writer = TFRecordWriter::Open(SmallFile(), {.sync = false});
  if (!writer.ok()) return false;
  std::mt19937_64 rng(2);
  std::string record(kSmallRecordSize, '\0');
  for (int i = 0; i < kSmallRecords; ++i) {
    for (char& c : record) c = static_cast<char>(rng());
    if (!(*writer)->Write(record).ok()) return false;
  }
  return (*writer)->Close().ok();
}

void BM_ReaderSmallRecords(benchmark::State& state) {
  std::string record;
  int64_t records = 0;
  const double cpu_start = ThreadCpuSeconds();
  for (auto _ : state) {
    auto reader = TFRecordReader::Open(SmallFile());
    if (!reader.ok()) {
      state.SkipWithError(reader.status().ToString().c_str());
      return;
    }
    while (true) {
      absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
      if (!more.ok() || !*more) break;
      ++records;
    }
  }
  state.SetItemsProcessed(records);
  state.SetBytesProcessed(records * static_cast<int64_t>(kSmallRecordSize + 16));
  SetCpuRate(state, records * static_cast<int64_t>(kSmallRecordSize + 16),
             ThreadCpuSeconds() - cpu_start);
}

// Real time throughout: cat's work happens in a child process.
BENCHMARK(BM_ReaderWithCrc)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReaderNoCrc)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Cat)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReaderSmallRecords)->UseRealTime()->Unit(benchmark::kMillisecond);

// The console output, plus each benchmark's rates (the medians when repeated) for the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool wanted =
          run.run_type == Run::RT_Aggregate ? run.aggregate_name == "median" : run.repetitions <= 1;
      if (!wanted || run.error_occurred) continue;
      for (const char* counter : {"bytes_per_second", "cpu_bytes_per_second"}) {
        auto it = run.counters.find(counter);
        if (it != run.counters.end()) rates[counter][run.run_name.function_name] = it->second.value;
      }
    }
  }
  // counter -> benchmark -> value
  std::map<std::string, std::map<std::string, double>> rates;
};

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!sluice::PrepareFile() || !sluice::PrepareSmallFile()) return 1;
  sluice::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::printf("\n");
  for (const auto& [counter, what] :
       {std::pair{"bytes_per_second", "wall"}, std::pair{"cpu_bytes_per_second", "CPU"}}) {
    const auto& r = reporter.rates[counter];
    auto cat = r.find("BM_Cat");
    if (cat == r.end() || cat->second <= 0) continue;
    for (const char* name : {"BM_ReaderWithCrc", "BM_ReaderNoCrc"}) {
      auto it = r.find(name);
      if (it == r.end()) continue;
      std::printf("%-17s %.2f GB/s by %-4s time = %.2f x cat (%.2f GB/s)\n", name, it->second / 1e9,
                  what, it->second / cat->second, cat->second / 1e9);
    }
  }
  return 0;
}
