#include "dataset/saved_dataset.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/buffer_pool.h"
#include "core/os_error.h"
#include "core/runtime.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "io/atomic_file.h"
#include "io/input_stream.h"

namespace sluice::internal {
namespace {

namespace fs = std::filesystem;

constexpr int kManifestVersion = 1;
constexpr int64_t kMaxShardId = 1 << 16;
// Freed element memory a reader keeps for the next elements: about those in flight after it.
constexpr size_t kReaderPoolBlocks = 16;
constexpr size_t kReaderPoolBytes = size_t{64} << 20;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// FNV-1a: stable across runs and builds, unlike absl::Hash. Only for display and a quick check.
uint64_t Fnv1a(absl::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

absl::Status CollectSourceFiles(const DatasetBase& node, std::vector<std::string>* files) {
  SLUICE_RETURN_IF_ERROR(node.AppendSourceFiles(files));
  for (const auto& input : node.inputs()) SLUICE_RETURN_IF_ERROR(CollectSourceFiles(*input, files));
  return absl::OkStatus();
}

std::string ShardName(const std::string& run, int64_t id, Compression c) {
  const char* suffix = c == Compression::kGzip ? ".gz" : c == Compression::kZlib ? ".zlib" : "";
  return absl::StrFormat("shard-%s-%05d.tfrecord%s", run, id, suffix);
}

std::string NewRunId() {
  std::random_device rd;
  return absl::StrFormat("%08x%08x", rd(), rd());
}

absl::StatusOr<std::string> ReadManifestBytes(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> in, FileInputStream::Open(path, false));
  std::string bytes;
  char buffer[64 << 10];
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(size_t n, in->Read(buffer, sizeof(buffer)));
    if (n == 0) break;
    bytes.append(buffer, n);
  }
  return bytes;
}

// The run a manifest file names; empty when there is none or it is no manifest of this version.
std::string ManifestRunId(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadManifestBytes(path);
  proto::SavedDatasetManifest m;
  if (!bytes.ok() || !m.ParseFromString(*bytes) || m.version() != kManifestVersion) return "";
  return m.run_id();
}

}  // namespace

absl::StatusOr<proto::SavedDatasetManifest> DescribeSavedInput(
    const DatasetBase& input, const std::string& user_fingerprint) {
  proto::SavedDatasetManifest m;
  m.set_pipeline(input.DebugString());
  m.set_user_fingerprint(user_fingerprint);
  // A fingerprint of the user's own stands for the input: its files need not even exist.
  std::vector<std::string> files;
  if (user_fingerprint.empty()) SLUICE_RETURN_IF_ERROR(CollectSourceFiles(input, &files));
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  uint64_t h = Fnv1a(m.pipeline());
  h = Fnv1a(user_fingerprint, h);
  for (const std::string& f : files) {
    struct stat st;
    proto::SavedSourceFile* s = m.add_sources();
    s->set_path(f);
    // A file that cannot be read now is the source's error to report, when it reads it.
    if (::stat(f.c_str(), &st) == 0) {
      s->set_size(st.st_size);
      s->set_mtime_ns(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    } else {
      s->set_size(-1);
    }
    h = Fnv1a(absl::StrCat(f, ":", s->size(), ":", s->mtime_ns()), h);
  }
  m.set_fingerprint(absl::StrFormat("%016x", h));
  const ElementSpec& spec = input.element_spec();
  m.set_element_spec_known(spec.known());
  for (const TensorSpec& component : spec.components()) {
    proto::SavedTensorSpec* c = m.add_element_spec();
    c->set_dtype(static_cast<int>(component.dtype));
    c->set_unknown_rank(component.shape.unknown_rank());
    for (int64_t d : component.shape.dims()) c->add_dims(d);
  }
  return m;
}

std::string SnapshotKey(const proto::SavedDatasetManifest& identity) {
  if (!identity.user_fingerprint().empty()) {
    return absl::StrFormat("%016x", Fnv1a(identity.user_fingerprint(), Fnv1a("fingerprint:")));
  }
  // The paths, not their sizes or times: a changed file rewrites its pipeline's snapshot in place.
  uint64_t h = Fnv1a(identity.pipeline(), Fnv1a("pipeline:"));
  for (const proto::SavedSourceFile& s : identity.sources()) h = Fnv1a(s.path() + '\0', h);
  return absl::StrFormat("%016x", h);
}

absl::StatusOr<ElementSpec> SavedElementSpec(const proto::SavedDatasetManifest& manifest,
                                             const std::string& dir) {
  if (!manifest.element_spec_known()) return ElementSpec();
  constexpr int kMaxRank = 64;
  std::vector<TensorSpec> components;
  for (int i = 0; i < manifest.element_spec_size(); ++i) {
    const proto::SavedTensorSpec& c = manifest.element_spec(i);
    const bool dims_ok =
        c.dims_size() <= kMaxRank && (!c.unknown_rank() || c.dims_size() == 0) &&
        std::all_of(c.dims().begin(), c.dims().end(), [](int64_t d) { return d >= -1; });
    if (c.dtype() < 0 || c.dtype() > static_cast<int>(DType::kBytes) || !dims_ok) {
      return absl::DataLossError(absl::StrCat(
          (fs::path(dir) / kManifestName).string(), ": component ", i,
          " of the element_spec is no tensor spec (dtype ", c.dtype(), ", ", c.dims_size(),
          " dimensions", c.unknown_rank() ? ", unknown rank" : "", ")"));
    }
    components.push_back(
        {static_cast<DType>(c.dtype()), c.unknown_rank() ? PartialShape::UnknownRank()
                                                         : PartialShape(absl::Span<const int64_t>(
                                                               c.dims().data(), c.dims_size()))});
  }
  return ElementSpec(std::move(components));
}

std::string StaleReason(const proto::SavedDatasetManifest& saved,
                        const proto::SavedDatasetManifest& now) {
  if (!now.user_fingerprint().empty() || !saved.user_fingerprint().empty()) {
    if (now.user_fingerprint() == saved.user_fingerprint()) return "";
    return absl::StrCat("it was written with fingerprint \"", saved.user_fingerprint(),
                        "\", this pipeline's is \"", now.user_fingerprint(), "\"");
  }
  if (saved.pipeline() != now.pipeline()) {
    return absl::StrCat("it was written by pipeline \"", saved.pipeline(), "\", this one is \"",
                        now.pipeline(), "\"");
  }
  std::map<std::string, const proto::SavedSourceFile*> before;
  for (const auto& s : saved.sources()) before[s.path()] = &s;
  for (const auto& s : now.sources()) {
    auto it = before.find(s.path());
    if (it == before.end()) return absl::StrCat("input file ", s.path(), " is new");
    if (it->second->size() != s.size() || it->second->mtime_ns() != s.mtime_ns()) {
      return absl::StrCat("input file ", s.path(), " changed (", it->second->size(), " -> ",
                          s.size(), " bytes, modified since)");
    }
    before.erase(it);
  }
  if (!before.empty()) return absl::StrCat("input file ", before.begin()->first, " is gone");
  return "";
}

SavedDatasetWriter::SavedDatasetWriter(std::string dir, proto::SavedDatasetManifest manifest,
                                       SavedWriteOptions options)
    : dir_(std::move(dir)), manifest_(std::move(manifest)), options_(std::move(options)) {}

SavedDatasetWriter::~SavedDatasetWriter() {
  // Shards a Finish renamed into place before it failed are named by no manifest.
  if (!finished_) RemoveOwnShards();
}

void SavedDatasetWriter::RemoveOwnShards() {
  for (const auto& [id, shard] : shards_) {
    // The final name: this run's alone, in place once Close renamed it (even if it then failed).
    std::error_code ignored;
    fs::remove(shard->path(), ignored);
  }
  shards_.clear();  // an unclosed shard's writer removes its temporary file
}

absl::StatusOr<std::unique_ptr<SavedDatasetWriter>> SavedDatasetWriter::Create(
    std::string dir, proto::SavedDatasetManifest identity, SavedWriteOptions options) {
  if (dir.empty()) return absl::InvalidArgumentError("no directory to save the dataset to");
  if (options.num_shards < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_shards is ", options.num_shards, "; it must be >= 0"));
  }
  if (options.num_shards == 0) options.num_shards = std::min(AvailableCores(), kMaxOpenShards);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create directory ", dir, ": ", ec ? ec.message() : "not a directory"));
  }
  identity.set_version(kManifestVersion);
  identity.set_run_id(NewRunId());
  identity.set_compression(static_cast<int>(options.compression));
  auto writer = std::unique_ptr<SavedDatasetWriter>(
      new SavedDatasetWriter(std::move(dir), std::move(identity), std::move(options)));
  writer->started_ns_ = NowNs();
  return writer;
}

absl::Status SavedDatasetWriter::Append(const Element& element) {
  int64_t id = elements_ % options_.num_shards;
  if (options_.shard_fn) {
    absl::StatusOr<int64_t> chosen = options_.shard_fn(element);
    if (!chosen.ok()) {
      return WithContext(chosen.status(), absl::StrCat("shard_fn at element ", elements_, ": "));
    }
    if (*chosen < 0 || *chosen >= kMaxShardId) {
      return absl::InvalidArgumentError(absl::StrCat("shard_fn gave element ", elements_, " shard ",
                                                     *chosen, "; shards are 0 to ",
                                                     kMaxShardId - 1));
    }
    id = *chosen;
  }
  // Before a shard is opened for it: an element too large to read back fails the write here.
  SLUICE_RETURN_IF_ERROR(
      SerializeElementRecord(element, absl::StrCat("element ", elements_), &record_));
  if (!open_shards_.contains(id) && open_shards_.size() >= size_t{kMaxOpenShards}) {
    auto lru = std::min_element(open_shards_.begin(), open_shards_.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    SLUICE_RETURN_IF_ERROR(shards_[lru->first]->Park());
    open_shards_.erase(lru);
  }
  auto shard = shards_.find(id);
  if (shard == shards_.end()) {
    // Not shards_[id] first: a failed open must leave no null writer behind.
    SLUICE_ASSIGN_OR_RETURN(
        std::unique_ptr<TFRecordWriter> opened,
        TFRecordWriter::Open(
            (fs::path(dir_) / ShardName(manifest_.run_id(), id, options_.compression)).string(),
            {.compression = options_.compression}));
    shard = shards_.emplace(id, std::move(opened)).first;
  }
  open_shards_[id] = elements_;
  SLUICE_RETURN_IF_ERROR(shard->second->Write(record_));
  ++shard_elements_[id];
  ++elements_;
  return absl::OkStatus();
}

absl::StatusOr<proto::SavedDatasetManifest> SavedDatasetWriter::Finish() {
  std::set<std::string> replaced;
  if (absl::Status done = CommitShardsAndManifest(&replaced); !done.ok()) {
    // A manifest renamed into place whose directory sync then failed names this run: its shards
    // stay. Otherwise the renamed shards are orphans, and an error must leave the directory as
    // it was. (The replaced run stays either way, in case the old manifest is what survives.)
    absl::StatusOr<OpenedSaved> now = OpenSaved(dir_);
    finished_ = now.ok() && now->run_id == manifest_.run_id();
    if (!finished_) RemoveOwnShards();
    return done;
  }
  finished_ = true;
  RemoveOtherRuns(replaced);
  // The damaged run's manifest goes with its shards, unless another reader has since renamed
  // a newer one over it.
  const std::string damaged = (fs::path(dir_) / kDamagedManifestName).string();
  if (const std::string run = ManifestRunId(damaged); !run.empty() && replaced.count(run) > 0) {
    std::error_code ignored;
    fs::remove(damaged, ignored);
  }
  return manifest_;
}

absl::Status SavedDatasetWriter::CommitShardsAndManifest(std::set<std::string>* replaced) {
  int64_t bytes = 0;
  for (auto& [id, shard] : shards_) {
    SLUICE_RETURN_IF_ERROR(shard->Close());
    std::error_code ec;
    const uintmax_t size = fs::file_size(shard->path(), ec);
    if (ec) return absl::InternalError(absl::StrCat(shard->path(), ": ", ec.message()));
    proto::SavedShard* s = manifest_.add_shards();
    s->set_file(fs::path(shard->path()).filename().string());
    s->set_elements(shard_elements_[id]);
    s->set_bytes(static_cast<int64_t>(size));
    bytes += static_cast<int64_t>(size);
  }
  manifest_.set_elements(elements_);
  manifest_.set_bytes(bytes);
  manifest_.set_created_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  manifest_.set_write_seconds(static_cast<double>(NowNs() - started_ns_) * 1e-9);
  // The runs this manifest replaces, whose shards go once it is in place: the one the manifest
  // names, and one a reader took out of use as damaged (no manifest names it any more).
  if (absl::StatusOr<OpenedSaved> old = OpenSaved(dir_); old.ok() && !old->run_id.empty()) {
    replaced->insert(old->run_id);
  }
  if (std::string damaged = ManifestRunId((fs::path(dir_) / kDamagedManifestName).string());
      !damaged.empty()) {
    replaced->insert(std::move(damaged));
  }
  replaced->erase(manifest_.run_id());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file,
                          AtomicFile::Create((fs::path(dir_) / kManifestName).string()));
  SLUICE_RETURN_IF_ERROR(file->Append(manifest_.SerializeAsString()));
  return file->Commit();
}

// Shards are named shard-<run>-<id>...: the replaced run goes whole. Another run may be a writer
// still at work on the same directory (two jobs saving one dataset), whose manifest will replace
// this one: its files stay unless none of them has changed for kStaleRunAge, which only a writer
// that died leaves behind.
void SavedDatasetWriter::RemoveOtherRuns(const std::set<std::string>& replaced) const {
  struct Run {
    std::vector<fs::path> files;
    fs::file_time_type newest = fs::file_time_type::min();
  };
  std::map<std::string, Run> runs;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!absl::StartsWith(name, "shard-")) continue;
    const size_t dash = name.find('-', 6);
    if (dash == std::string::npos) continue;
    const std::string run = name.substr(6, dash - 6);
    if (run == manifest_.run_id()) continue;
    Run& r = runs[run];
    r.files.push_back(it->path());
    std::error_code time_error;
    const fs::file_time_type modified = fs::last_write_time(it->path(), time_error);
    // A file that cannot be dated counts as new: better kept than removed under a live writer.
    r.newest = std::max(r.newest, time_error ? fs::file_time_type::max() : modified);
  }
  const fs::file_time_type stale_before = fs::file_time_type::clock::now() - kStaleRunAge;
  for (const auto& [run, r] : runs) {
    if (replaced.count(run) == 0 && r.newest >= stale_before) continue;
    for (const fs::path& f : r.files) {
      std::error_code ignored;
      fs::remove(f, ignored);
    }
  }
}

absl::StatusOr<OpenedSaved> OpenSaved(const std::string& dir) {
  OpenedSaved out;
  const std::string path = (fs::path(dir) / kManifestName).string();
  absl::StatusOr<std::string> bytes = ReadManifestBytes(path);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return out;
    return bytes.status();
  }
  proto::SavedDatasetManifest m;
  if (!m.ParseFromString(*bytes) || m.version() != kManifestVersion) {
    out.invalid = absl::StrCat(path, " is not a manifest of version ", kManifestVersion);
    return out;
  }
  out.run_id = m.run_id();
  int64_t elements = 0;
  for (const proto::SavedShard& s : m.shards()) {
    const fs::path shard = fs::path(dir) / s.file();
    std::error_code ec;
    const uintmax_t size = fs::file_size(shard, ec);
    if (s.file().find('/') != std::string::npos || s.elements() < 0) {
      out.invalid =
          absl::StrCat(path, " names shard \"", s.file(), "\" with ", s.elements(), " elements");
      return out;
    }
    if (ec) {
      out.invalid = absl::StrCat("shard ", shard.string(), " is missing (", ec.message(), ")");
      return out;
    }
    if (static_cast<int64_t>(size) != s.bytes()) {
      out.invalid = absl::StrCat("shard ", shard.string(), " holds ", size, " bytes, the manifest ",
                                 s.bytes());
      return out;
    }
    elements += s.elements();
  }
  if (elements != m.elements()) {
    out.invalid = absl::StrCat(path, " counts ", m.elements(), " elements, its shards ", elements);
    return out;
  }
  out.manifest = std::move(m);
  return out;
}

absl::StatusOr<bool> InvalidateSaved(const std::string& dir, const std::string& run_id) {
  SLUICE_ASSIGN_OR_RETURN(const OpenedSaved opened, OpenSaved(dir));
  if (run_id.empty() || opened.run_id != run_id) return false;
  // A writer may put its manifest in place between the check and the rename; that one is then
  // taken out of use instead, and the next pass only writes once more.
  const fs::path from = fs::path(dir) / kManifestName;
  const fs::path to = fs::path(dir) / kDamagedManifestName;
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec == std::errc::no_such_file_or_directory) return false;  // another reader was first
  if (ec) {
    return OsError(ec.value(), "cannot rename ", from.string(), " to ", to.string());
  }
  return true;
}

absl::StatusOr<std::unique_ptr<SavedDatasetReader>> SavedDatasetReader::Create(
    const DatasetBase* owner, const IteratorContext& ctx, std::string dir,
    proto::SavedDatasetManifest manifest, const ReaderFn& reader_fn) {
  const Compression compression = static_cast<Compression>(manifest.compression());
  if (compression != Compression::kNone && compression != Compression::kGzip &&
      compression != Compression::kZlib) {
    return absl::DataLossError(
        absl::StrCat(dir, "/", kManifestName, ": unknown compression ", manifest.compression()));
  }
  std::vector<Dataset> shards;
  // Elements are made on the reading threads and freed wherever the pipeline ends, so malloc
  // hands their pages back to the kernel and every new one faults them in again (a third of the
  // kernel time of reading decoded images); recycled memory does not.
  std::shared_ptr<BufferPool> pool = BufferPool::Create(kReaderPoolBlocks, kReaderPoolBytes);
  // A Snapshot's elements are its input's, a Load's what its manifest records (or what the user
  // gave): declared to the reading pipeline, so that every element read and its checkpoints are
  // checked against them. The manifest's where the owner's is unknown.
  SLUICE_ASSIGN_OR_RETURN(const ElementSpec saved_spec, SavedElementSpec(manifest, dir));
  const ElementSpec spec = owner->element_spec().known() ? owner->element_spec() : saved_spec;
  for (const proto::SavedShard& s : manifest.shards()) {
    const std::string file = (fs::path(dir) / s.file()).string();
    shards.push_back(
        Dataset::TFRecord(file, {.compression = compression})
            .Map(
                [file, pool, spec](Element record,
                                   const ElementContext& context) -> absl::StatusOr<Element> {
                  // Parsed in place: an ElementProto would copy each image once more.
                  absl::StatusOr<Element> element =
                      ElementFromSerialized(record[0].scalar<std::string>(), pool.get());
                  if (!element.ok()) {
                    return absl::DataLossError(absl::StrCat(file, ": record ", context.index,
                                                            " is not a saved element (",
                                                            element.status().message(), ")"));
                  }
                  if (absl::Status valid = spec.Check(*element); !valid.ok()) {
                    return absl::DataLossError(absl::StrCat(file, ": record ", context.index,
                                                            " is not ", spec.DebugString(), " (",
                                                            valid.message(), ")"));
                  }
                  return element;
                },
                {.output_signature = spec}));
  }
  Dataset pipeline = Dataset::Range(0);
  if (reader_fn) {
    SLUICE_ASSIGN_OR_RETURN(pipeline, reader_fn(std::move(shards)));
  } else if (shards.size() == 1) {
    pipeline = shards[0];
  } else if (!shards.empty()) {
    const int n = static_cast<int>(shards.size());
    pipeline = Dataset::Range(n).Interleave(
        [shards](Element i) -> absl::StatusOr<Dataset> {
          // A restored checkpoint hands this its saved elements: check them.
          if (i.size() != 1 || i[0].dtype() != DType::kInt64 || i[0].num_elements() != 1 ||
              i[0].data<int64_t>()[0] < 0 ||
              i[0].data<int64_t>()[0] >= static_cast<int64_t>(shards.size())) {
            return absl::DataLossError(
                absl::StrCat("no shard ", ElementDebugString(i), " of ", shards.size()));
          }
          return shards[static_cast<size_t>(i[0].data<int64_t>()[0])];
        },
        // Bounded as the writer is: a shard_fn's 65,536 shards are not all opened at once.
        {.cycle_length = std::min(n, kMaxOpenShards),
         .block_length = 1,
         .num_parallel_calls = std::min(n, AvailableCores()),
         .deterministic = true,
         .output_signature = spec});
  }
  auto reader = std::unique_ptr<SavedDatasetReader>(
      new SavedDatasetReader(owner, std::move(dir), std::move(manifest)));
  reader->pipeline_ = pipeline.base();
  SLUICE_ASSIGN_OR_RETURN(reader->input_,
                          pipeline.base()->MakeIterator(ctx.ForInner(owner->name(), 0)));
  return reader;
}

absl::Status SavedDatasetReader::Save(proto::IteratorStateProto* state) {
  (*state->mutable_blobs())["run_id"] = manifest_.run_id();
  return IteratorBase::SaveInput(input_.get(), state);
}

absl::Status SavedDatasetReader::Restore(const proto::IteratorStateProto& state) {
  auto run = state.blobs().find("run_id");
  if (run == state.blobs().end()) {
    return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " lacks its run id"));
  }
  if (run->second != manifest_.run_id()) {
    return absl::FailedPreconditionError(
        absl::StrCat(owner_->name(), ": the checkpoint was reading run ", run->second, " of ", dir_,
                     ", which now holds run ", manifest_.run_id(), " (rewritten since)"));
  }
  SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, IteratorBase::InputState(state, 0));
  if (in == nullptr) {
    return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " lacks its reader"));
  }
  return input_->Restore(*in);
}

}  // namespace sluice::internal
