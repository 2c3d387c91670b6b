#include "dataset/iterator.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "dataset/dataset.h"
#include "dataset/device_elements.h"
#include "io/deterministic_proto.h"

namespace sluice {
namespace {

constexpr int kCheckpointVersion = 1;

// The options in effect: those set nearest the end of the pipeline win.
Options CollectOptions(const DatasetBase& d) {
  Options merged;
  for (const auto& in : d.inputs()) merged = merged.MergedWith(CollectOptions(*in));
  if (d.options() != nullptr) merged = merged.MergedWith(*d.options());
  return merged;
}

// Constant-initialized, so that no static initializer order matters.
std::atomic<IteratorTunerFactory> tuner_factory{nullptr};

bool HasAutotuneKnob(const StatsRegistry& registry) {
  for (const auto& n : registry.Nodes()) {
    for (const Tunable* t : {&n->parallelism, &n->buffer_size, &n->cycle_length}) {
      if (t->present.load() && t->autotune.load()) return true;
    }
  }
  return false;
}

// The arena's threads: Options::threads (0: every core), at most cpu_budget.
int ArenaThreads(const Options& options) {
  int threads = options.threads.value_or(0);
  if (threads <= 0) threads = AvailableCores();
  if (options.cpu_budget.value_or(0) > 0) threads = std::min(threads, *options.cpu_budget);
  return threads;
}

}  // namespace

void SetIteratorTunerFactory(IteratorTunerFactory factory) { tuner_factory.store(factory); }

IteratorTunerFactory GetIteratorTunerFactory() { return tuner_factory.load(); }

Iterator::Iterator(std::shared_ptr<const DatasetBase> dataset) : dataset_(std::move(dataset)) {
  ctx_.options = CollectOptions(*dataset_);
  ctx_.runtime = std::make_shared<Runtime>(ArenaThreads(ctx_.options));
  ctx_.cancellation = std::make_shared<CancellationManager>();
  ctx_.stats = std::make_shared<StatsRegistry>();
  ctx_.seed = ctx_.options.seed ? *ctx_.options.seed : std::random_device{}();
  ctx_.salt = dataset_->NextIteration();  // 0 for the first: as a pipeline iterated once
  // While a profile records, its counters show each node's buffer and AUTOTUNE's knobs over
  // time ("Prefetch[7] buffered_elements", "Map[4] parallelism").
  counter_source_ = profiler::RegisterCounterSource(
      [stats = ctx_.stats](const profiler::CounterReporter& report) {
        for (const NodeStatsSnapshot& n : stats->Snapshot()) {
          if (n.buffered_elements > 0 || n.buffer_size >= 0) {
            report(absl::StrCat(n.name, " buffered_elements"),
                   static_cast<double>(n.buffered_elements));
            report(absl::StrCat(n.name, " buffered_bytes"), static_cast<double>(n.buffered_bytes));
          }
          if (n.parallelism >= 0) {
            report(absl::StrCat(n.name, " parallelism"), static_cast<double>(n.parallelism));
          }
          if (n.buffer_size >= 0) {
            report(absl::StrCat(n.name, " buffer_size"), static_cast<double>(n.buffer_size));
          }
        }
      });
}

Iterator::~Iterator() {
  profiler::UnregisterCounterSource(counter_source_);
  // The tuner first: it must not turn knobs of nodes being torn down.
  tuner_view_.store(nullptr, std::memory_order_release);
  tuner_.reset();
  // Wake every blocked wait first, then destroy the nodes (which join their
  // threads) while nothing can block any more.
  ctx_.cancellation->Cancel();
  MutexLock l(&mu_);
  root_.reset();
}

void Iterator::Cancel() { ctx_.cancellation->Cancel(); }

absl::Status Iterator::EnsureStarted() {
  if (started_) return error_;
  started_ = true;
  // A negative count was taken as 0 (all cores, no budget): refused, as tf.data's options are.
  const Options& o = ctx_.options;
  for (const auto& [name, value] :
       {std::pair<const char*, int64_t>{"threads", o.threads.value_or(0)},
        {"cpu_budget", o.cpu_budget.value_or(0)},
        {"ram_budget", o.ram_budget.value_or(0)}}) {
    if (value < 0) {
      error_ = absl::InvalidArgumentError(
          absl::StrCat("Options::", name, " must be >= 0 (0: the default), got ", value));
      return error_;
    }
  }
  // A node that would read device memory on the host fails here, before any node starts.
  if (absl::Status s = CheckNoHostReadsOfDeviceElements(*dataset_); !s.ok()) {
    error_ = s;
    return error_;
  }
  auto root = dataset_->MakeIterator(ctx_);
  if (!root.ok()) {
    error_ = root.status();
    return error_;
  }
  root_ = std::move(*root);
  // The nodes and their knobs exist and nothing works yet: AUTOTUNE's budgets
  // hold from the first element.
  const IteratorTunerFactory factory = tuner_factory.load();
  if (factory != nullptr && ctx_.options.autotune.value_or(true) && HasAutotuneKnob(*ctx_.stats)) {
    tuner_ = factory(*this);
    tuner_view_.store(tuner_.get(), std::memory_order_release);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Element>> Iterator::GetNext() {
  MutexLock l(&mu_);
  SLUICE_RETURN_IF_ERROR(EnsureStarted());
  SLUICE_RETURN_IF_ERROR(error_);
  auto result = root_->GetNext();
  if (!result.ok()) error_ = result.status();
  return result;
}

NextReadiness Iterator::WaitForNext(std::chrono::steady_clock::time_point deadline) {
  MutexLock l(&mu_);
  if (!error_.ok()) return NextReadiness::kReady;
  if (root_ == nullptr) return NextReadiness::kUnknown;
  return root_->WaitForNext(deadline);
}

absl::Status Iterator::Initialize() {
  MutexLock l(&mu_);
  return EnsureStarted();
}

absl::StatusOr<std::string> Iterator::Save() {
  MutexLock l(&mu_);
  SLUICE_RETURN_IF_ERROR(EnsureStarted());
  SLUICE_RETURN_IF_ERROR(error_);
  proto::IteratorCheckpoint ckpt;
  ckpt.set_version(kCheckpointVersion);
  ckpt.set_pipeline(dataset_->DebugString());
  ckpt.set_seed(ctx_.seed);
  ckpt.set_salt(ctx_.salt);
  SLUICE_RETURN_IF_ERROR(root_->Save(ckpt.mutable_root()));
  // Protobuf serializes at most 2 GiB; past that SerializeAsString returns an empty string,
  // which would restore as nothing. Buffers saved whole (elements without sources) get there.
  const size_t bytes = ckpt.ByteSizeLong();
  std::string out;
  if (bytes <= static_cast<size_t>(INT32_MAX)) out = SerializeDeterministically(ckpt);
  if (out.size() != bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the iterator checkpoint would be ", bytes,
        " bytes, over protobuf's 2 GiB: buffers of elements that no source describes are "
        "saved whole (see Options::checkpoint_sources); make them smaller"));
  }
  return out;
}

absl::Status Iterator::Restore(const std::string& checkpoint) {
  MutexLock l(&mu_);
  if (started_) {
    return absl::FailedPreconditionError(
        "Restore must be called on a fresh iterator, before the first GetNext");
  }
  if (checkpoint.empty()) {
    // It parses, as a checkpoint of version 0, which told nothing.
    return absl::InvalidArgumentError(
        "iterator checkpoint is empty (0 bytes): not what Iterator::Save returned");
  }
  proto::IteratorCheckpoint ckpt;
  if (!ckpt.ParseFromString(checkpoint)) {
    return absl::DataLossError("iterator checkpoint does not parse");
  }
  if (ckpt.version() != kCheckpointVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "iterator checkpoint version ", ckpt.version(), ", expected ", kCheckpointVersion));
  }
  if (ckpt.pipeline() != dataset_->DebugString()) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint was saved from pipeline \"",
                                                      ckpt.pipeline(), "\", not \"",
                                                      dataset_->DebugString(), "\""));
  }
  // Before the nodes are made: they derive seeds from both. A checkpoint from before the salt
  // was saved has 0, the first iteration's.
  ctx_.seed = ckpt.seed();
  ctx_.salt = ckpt.salt();
  SLUICE_RETURN_IF_ERROR(EnsureStarted());
  absl::Status s = root_->Restore(ckpt.root());
  if (!s.ok()) error_ = s;
  return s;
}

std::vector<NodeStatsSnapshot> Iterator::Stats() const { return ctx_.stats->Snapshot(); }

std::unique_ptr<Iterator> Dataset::MakeIterator() const {
  return std::make_unique<Iterator>(base_);
}

int64_t Dataset::Cardinality() const { return base_->Cardinality(); }

std::string Dataset::DebugString() const { return base_->DebugString(); }

ElementSpec Dataset::element_spec() const { return base_->element_spec(); }

}  // namespace sluice
