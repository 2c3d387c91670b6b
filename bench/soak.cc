// The soak test of issue 46 (tools/soak.sh HOURS runs it): one long-lived process that, in a
// loop until its time is up,
//  - iterates pipelines that together exercise every Dataset op, each checkpointed at a random
//    element and restored into a fresh iterator, whose rest must equal the original's;
//  - trains a model whose run fails at a random step and resumes from its BackupAndRestore
//    backups, whose final weights must equal a run never interrupted;
//  - samples its resident set and its open file descriptors after each cycle.
// It fails (exit 1) on any mismatch, on a resident set that grows above 5% over its plateau (the
// maximum over the first hour, or the run's first half when shorter, after a warm-up), and on a
// descriptor count above the plateau's. It prints a line per cycle and a JSON summary at the end.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_context.h"
#include "sluice.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

struct Sample {
  double minutes = 0;
  double rss_mb = 0;
  int fds = 0;
};

double ResidentMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

int OpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    --n;  // the directory stream's own
  }
  return n;
}

// FNV-1a over an element's dtypes, shapes and values.
uint64_t Hash(const Element& e, uint64_t h) {
  auto mix = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (const Tensor& t : e) {
    const auto dtype = static_cast<uint8_t>(t.dtype());
    mix(&dtype, 1);
    for (int d = 0; d < t.rank(); ++d) {
      const int64_t dim = t.dim(d);
      mix(&dim, sizeof(dim));
    }
    if (t.dtype() == DType::kBytes) {
      for (const std::string& s : t.flat<std::string>()) mix(s.data(), s.size());
    } else {
      mix(t.raw_data(), t.num_elements() * DTypeSize(t.dtype()));
    }
  }
  return h;
}

struct Pass {
  int64_t elements = 0;
  uint64_t hash = 14695981039346656037ull;
};

absl::StatusOr<Pass> Drain(Iterator& it, Pass pass = {}) {
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.GetNext());
    if (!e) return pass;
    pass.hash = Hash(*e, pass.hash);
    ++pass.elements;
  }
}

// The pipelines, each seeded (the same elements every cycle), together using every op.
std::vector<std::pair<std::string, Dataset>> Pipelines(const std::string& data,
                                                       const std::string& scratch) {
  auto square = [](Element e) -> absl::StatusOr<Element> {
    const int64_t x = e[0].scalar<int64_t>();
    return Element{e[0], Tensor::Scalar<float>(static_cast<float>(x * x))};
  };
  auto key = [](const Element& e) -> absl::StatusOr<int64_t> { return e[0].scalar<int64_t>() % 4; };
  auto batch_window = [](int64_t, Dataset w) -> absl::StatusOr<Dataset> { return w.Batch(8); };
  auto images = train::data::MakeImageDataset(
      {.files = data + "/train-*.tfrecord", .batch_size = 32, .shuffle_buffer = 512, .seed = 3});
  std::vector<std::pair<std::string, Dataset>> p;
  if (images.ok()) {
    p.emplace_back("images", images
                                 ->Filter([](const Element& e) -> absl::StatusOr<bool> {
                                   return e[1].flat<int64_t>()[0] != 3;
                                 })
                                 .Take(120));
  }
  p.emplace_back("structure", Dataset::Range(6000)
                                  .Enumerate()
                                  .Map([](Element e) -> absl::StatusOr<Element> { return e; })
                                  .Batch(16)
                                  .Rebatch(10)
                                  .Unbatch()
                                  .Shuffle(64, {.seed = 5})
                                  .Skip(3)
                                  .Take(500)
                                  .Cache()
                                  .Repeat(2)
                                  .Prefetch(4));
  p.emplace_back("windows",
                 Dataset::Range(4000)
                     .Map(square, {.num_parallel_calls = 2})
                     .Window(7, {.shift = 3})
                     .Unbatch()
                     .Zip(Dataset::Range(100000))
                     .Map([](Element e) -> absl::StatusOr<Element> { return Element{e[0]}; })
                     .GroupByWindow(key, batch_window, 8)
                     .Unbatch()
                     .PaddedBatch(5)
                     .Shard(2, 1));
  p.emplace_back(
      "mixing",
      Dataset::SampleFromDatasets({Dataset::Range(0, 3000), Dataset::Range(5000, 8000)}, {0.3, 0.7},
                                  {.seed = 9})
          .Concatenate(Dataset::ChooseFromDatasets(
              {Dataset::Range(100), Dataset::Range(200, 300)},
              Dataset::Range(200).Map([](Element e) -> absl::StatusOr<Element> {
                return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() % 2)};
              })))
          .FlatMap([](Element e) -> absl::StatusOr<Dataset> {
            return Dataset::Range(e[0].scalar<int64_t>() % 3);
          })
          .Interleave(
              [](Element e) -> absl::StatusOr<Dataset> {
                return Dataset::Range(e[0].scalar<int64_t>() % 4 + 1);
              },
              {.cycle_length = 3, .num_parallel_calls = 2})
          .Scan({Tensor::Scalar<int64_t>(0)},
                [](Element state, Element e) -> absl::StatusOr<std::pair<Element, Element>> {
                  Element next{
                      Tensor::Scalar<int64_t>(state[0].scalar<int64_t>() + e[0].scalar<int64_t>())};
                  return std::make_pair(next, next);
                })
          .Map([](Element e) -> absl::StatusOr<Element> {
            if (e[0].scalar<int64_t>() % 97 == 0) return absl::DataLossError("dropped");
            return e;
          })
          .IgnoreErrors()
          .Cache(scratch + "/cache"));
  // Text sources, and a saved dataset loaded back (written once, by the first cycle).
  const std::string csv = scratch + "/rows.csv";
  if (!fs::exists(csv)) {
    std::ofstream out(csv);
    for (int i = 0; i < 2000; ++i) out << i << "," << i * 0.5 << ",row" << i % 7 << "\n";
  }
  p.emplace_back("text",
                 Dataset::TextLine(csv)
                     .Zip(Dataset::Csv({csv}, {Tensor::Scalar<int64_t>(0), Tensor::Scalar<float>(0),
                                               Tensor(DType::kBytes, Shape{})}))
                     .Batch(64, {.drop_remainder = true}));
  const std::string saved = scratch + "/saved";
  if (!fs::exists(saved)) {
    Dataset::Range(1000).Map(square).Save(saved).IgnoreError();
  }
  p.emplace_back("sources",
                 Dataset::Load(saved)
                     .Concatenate(Dataset::FromTensorSlices({Tensor::FromVector<int64_t>({1, 2, 3}),
                                                             Tensor::FromVector<float>({1, 4, 9})}))
                     .Concatenate(Dataset::FromTensors(
                         {Tensor::Scalar<int64_t>(4), Tensor::Scalar<float>(16)}))
                     .Concatenate(Dataset::FromGenerator([] {
                       return [i = int64_t{0}]() mutable -> absl::StatusOr<std::optional<Element>> {
                         if (i == 50) return std::optional<Element>();
                         ++i;
                         return std::optional<Element>(
                             Element{Tensor::Scalar<int64_t>(i), Tensor::Scalar<float>(i * 1.0f)});
                       };
                     }))
                     .Map([](Element e) -> absl::StatusOr<Element> {
                       // A sequence of length x % 9 for BucketBySequenceLength.
                       const int64_t n = e[0].scalar<int64_t>() % 9 + 1;
                       return Element{Tensor::FromVector<float>(std::vector<float>(n, 1.0f))};
                     })
                     .BucketBySequenceLength(
                         [](const Element& e) -> absl::StatusOr<int64_t> { return e[0].dim(0); },
                         {3, 6}, {4, 4, 4}));
  p.emplace_back("snapshot", Dataset::Range(3000)
                                 .Map(square)
                                 .Snapshot(scratch + "/snapshot")
                                 .Shuffle(100, {.seed = 2})
                                 .Batch(32));
  return p;
}

// Iterates `data` whole, then again with a save at a random element and a restore into a fresh
// iterator; both, and the first cycle's, must agree.
absl::Status CheckPipeline(const std::string& name, const Dataset& data, std::mt19937& rng,
                           std::map<std::string, Pass>& reference) {
  SLUICE_ASSIGN_OR_RETURN(Pass whole, Drain(*data.MakeIterator()));
  auto [it, fresh] = reference.emplace(name, whole);
  if (!fresh && (it->second.hash != whole.hash || it->second.elements != whole.elements)) {
    return absl::InternalError(absl::StrCat(name, ": a pass differs from the first cycle's"));
  }
  const int64_t at = std::uniform_int_distribution<int64_t>(0, whole.elements)(rng);
  std::unique_ptr<Iterator> first = data.MakeIterator();
  for (int64_t i = 0; i < at; ++i) SLUICE_RETURN_IF_ERROR(first->GetNext().status());
  SLUICE_ASSIGN_OR_RETURN(std::string state, first->Save());
  SLUICE_ASSIGN_OR_RETURN(Pass rest, Drain(*first));
  std::unique_ptr<Iterator> restored = data.MakeIterator();
  SLUICE_RETURN_IF_ERROR(restored->Restore(state));
  SLUICE_ASSIGN_OR_RETURN(Pass resumed, Drain(*restored));
  if (rest.hash != resumed.hash || rest.elements != resumed.elements) {
    return absl::InternalError(absl::StrCat(name, ": restored at element ", at,
                                            ", the rest differs (", resumed.elements,
                                            " elements against ", rest.elements, ")"));
  }
  return absl::OkStatus();
}

class FailAt : public train::callbacks::Callback {
 public:
  explicit FailAt(int64_t step) : step_(step) {}
  absl::Status OnBatchEnd(int64_t, const train::callbacks::Logs&) override {
    return trainer()->global_step() == step_ ? absl::AbortedError("soak: a planned failure")
                                             : absl::OkStatus();
  }
  bool NeedsBatchLogs() const override { return false; }

 private:
  int64_t step_;
};

// mlp on 640 images, 2 epochs; with `fail_at` > 0 the first Fit fails there and a second resumes
// from the backups. The hash of the final variables.
absl::StatusOr<uint64_t> Train(const std::string& data, const std::string& backups,
                               int64_t fail_at) {
  SLUICE_ASSIGN_OR_RETURN(
      train::recipes::LabeledImages images,
      train::recipes::TFRecordImages({.dir = data, .batch_size = 64, .limit = 640, .seed = 1}));
  std::unique_ptr<train::layers::Module> model;
  for (int attempt = 0; attempt < 2; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(model, train::models::MakeModel("mlp", {}, 7));
    train::optimizers::Adam adam(0.002f);
    train::fit::Trainer trainer(*model, adam);
    train::callbacks::BackupAndRestore backup({.backup_dir = backups, .save_freq = 3});
    FailAt fail(attempt == 0 ? fail_at : -1);
    absl::StatusOr<train::fit::History> h =
        trainer.Fit(images.train, {.epochs = 2, .callbacks = {&backup, &fail}, .verbose = 0});
    if (h.ok()) break;
    if (!absl::IsAborted(h.status()) || attempt == 1) return h.status();
  }
  SLUICE_ASSIGN_OR_RETURN(auto vars, train::autodiff::SnapshotVariables(model->Variables()));
  uint64_t hash = 14695981039346656037ull;
  for (const auto& [name, value] : vars) hash = Hash(Element{value}, hash);
  return hash;
}

int Run(double hours, const std::string& data, const std::string& scratch) {
  fs::create_directories(scratch);
  const auto start = std::chrono::steady_clock::now();
  auto minutes = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  };
  const double total = hours * 60;
  std::mt19937 rng(2026);
  std::map<std::string, Pass> reference;
  absl::StatusOr<uint64_t> straight = Train(data, scratch + "/straight", 0);
  if (!straight.ok())
    return std::fprintf(stderr, "soak: %s\n", straight.status().ToString().c_str()), 1;
  std::vector<Sample> samples;
  int64_t cycles = 0;
  absl::Status failed;
  while (minutes() < total && failed.ok()) {
    for (auto& [name, pipeline] : Pipelines(data, scratch)) {
      failed.Update(WithContext(CheckPipeline(name, pipeline, rng, reference), name + ": "));
    }
    const int64_t fail_at = std::uniform_int_distribution<int64_t>(1, 19)(rng);
    absl::StatusOr<uint64_t> resumed = Train(data, scratch + "/backups", fail_at);
    if (!resumed.ok()) {
      failed.Update(resumed.status());
    } else if (*resumed != *straight) {
      failed.Update(absl::InternalError(
          absl::StrCat("training resumed after a failure at step ", fail_at,
                       " ended with other weights than the run never interrupted")));
    }
    ++cycles;
    samples.push_back({minutes(), ResidentMb(), OpenFds()});
    std::printf("%7.1f min  cycle %5lld  rss %7.1f MiB  fds %3d\n", samples.back().minutes,
                static_cast<long long>(cycles), samples.back().rss_mb, samples.back().fds);
    std::fflush(stdout);
  }
  // The plateau: after a warm-up (a sixth of the run, at most 10 minutes), up to an hour (or
  // half the run); every later sample must stay within 5% of its resident set, and at its fds.
  const double warm = std::min(10.0, total / 6), plateau_end = std::min(60.0, total / 2);
  double plateau_rss = 0, late_rss = 0;
  int plateau_fds = 0, late_fds = 0, late_samples = 0;
  for (const Sample& s : samples) {
    if (s.minutes >= warm && s.minutes <= plateau_end) {
      plateau_rss = std::max(plateau_rss, s.rss_mb);
      plateau_fds = std::max(plateau_fds, s.fds);
    } else if (s.minutes > plateau_end) {
      late_rss = std::max(late_rss, s.rss_mb);
      late_fds = std::max(late_fds, s.fds);
      ++late_samples;
    }
  }
  if (failed.ok() && late_samples > 0 && late_rss > 1.05 * plateau_rss) {
    failed = absl::ResourceExhaustedError(absl::StrFormat(
        "the resident set grew: %.1f MiB after the plateau's %.1f MiB", late_rss, plateau_rss));
  }
  if (failed.ok() && late_samples > 0 && late_fds > plateau_fds) {
    failed = absl::ResourceExhaustedError(absl::StrCat("open file descriptors grew: ", late_fds,
                                                       " after the plateau's ", plateau_fds));
  }
  std::printf(
      "{\"hours\": %.2f, \"cycles\": %lld, \"plateau_rss_mb\": %.1f, \"late_max_rss_mb\": %.1f, "
      "\"plateau_fds\": %d, \"late_max_fds\": %d, \"late_samples\": %d, \"ok\": %s, "
      "\"error\": \"%s\"}\n",
      minutes() / 60, static_cast<long long>(cycles), plateau_rss, late_rss, plateau_fds, late_fds,
      late_samples, failed.ok() ? "true" : "false", std::string(failed.message()).c_str());
  fs::remove_all(scratch);
  return failed.ok() ? 0 : 1;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "Usage: soak HOURS DATA_DIR [SCRATCH_DIR]\n"
                 "DATA_DIR: `sluice convert fashion-mnist`'s shards. See bench/soak.cc.\n");
    return 2;
  }
  const std::string scratch =
      argc > 3 ? argv[3] : (std::filesystem::temp_directory_path() / "sluice_soak").string();
  return sluice::Run(std::atof(argv[1]), argv[2], scratch);
}
