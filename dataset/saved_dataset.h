#ifndef SLUICE_DATASET_SAVED_DATASET_H_
#define SLUICE_DATASET_SAVED_DATASET_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/proto/saved_dataset.pb.h"
#include "io/tfrecord_writer.h"

// A dataset saved to a directory, shared by Dataset::Save / Load and Snapshot.
//
// The directory holds shard files "shard-<run>-<id>.tfrecord" (TFRecord-framed ElementProto
// records, optionally GZIP/ZLIB-compressed) and "manifest.pb", a SavedDatasetManifest. Each
// shard is written under a temporary name and renamed into place when complete; the manifest is
// written last, the same way. A reader trusts only the manifest: a directory without one, or
// whose shards are missing or of another size than it records, is not read. Once a new manifest
// is in place, the shards of other runs are removed.
namespace sluice::internal {

inline constexpr char kManifestName[] = "manifest.pb";
// Shard files a writer or the default reader keeps open at once; also the most shards num_shards
// defaults to (the core count), so that a round-robin write never reopens one per element.
inline constexpr int kMaxOpenShards = 64;
// A manifest whose run was found damaged while read (InvalidateSaved), kept for inspection until
// the next writer of the directory removes it with that run's shards.
inline constexpr char kDamagedManifestName[] = "manifest.pb.damaged";

// The pipeline a saved dataset came from: its description, the files it reads (size and
// modification time), the user's fingerprint and its element_spec. Only those fields are set.
absl::StatusOr<proto::SavedDatasetManifest> DescribeSavedInput(const DatasetBase& input,
                                                               const std::string& user_fingerprint);

// The element_spec `manifest` (of the saved dataset in `dir`) records; unknown when it records
// none. DataLoss naming the manifest when what it records is no spec (an unknown dtype, a
// dimension below -1, a rank over 64): a file's contents are not trusted.
absl::StatusOr<ElementSpec> SavedElementSpec(const proto::SavedDatasetManifest& manifest,
                                             const std::string& dir);

// The subdirectory of a Snapshot path that holds the snapshot of the pipeline `identity`
// (DescribeSavedInput's) describes: 16 hex digits of a hash of the user's fingerprint when given,
// else of the pipeline's description and its input files' paths. Pipelines of other descriptions
// or files (train and eval) so keep their own snapshots at one path, as tf.data's do; one whose
// input files changed in size or time rewrites its own.
std::string SnapshotKey(const proto::SavedDatasetManifest& identity);

// Why a saved dataset does not hold what `now` (DescribeSavedInput's) describes; empty when it
// does. With a user fingerprint, only the fingerprints are compared.
std::string StaleReason(const proto::SavedDatasetManifest& saved,
                        const proto::SavedDatasetManifest& now);

struct SavedWriteOptions {
  Compression compression = Compression::kNone;
  int num_shards = 0;  // 0: the machine's cores, at most kMaxOpenShards
  ShardFn shard_fn;    // unset: round-robin
};

class SavedDatasetWriter {
 public:
  // `identity` comes from DescribeSavedInput.
  static absl::StatusOr<std::unique_ptr<SavedDatasetWriter>> Create(
      std::string dir, proto::SavedDatasetManifest identity, SavedWriteOptions options);
  // Abandons an unfinished write: its shard files go (temporary or already renamed into place),
  // the directory is as it was.
  ~SavedDatasetWriter();

  absl::Status Append(const Element& element);
  // Completes the shards, then the manifest, then removes the shards of the run that manifest
  // replaced (and of a run InvalidateSaved took out of use), and of any other run none of whose
  // files has changed for kStaleRunAge (a writer that died); another writer's run still at work
  // on the directory is left alone. An error before the manifest is in place removes this run's
  // shards: the directory is as it was.
  absl::StatusOr<proto::SavedDatasetManifest> Finish();

  static constexpr std::chrono::minutes kStaleRunAge{60};
  // Shards open at once: a shard_fn may name up to 65,536. Past this, the one written least
  // recently is parked (TFRecordWriter::Park: no descriptor, no buffers) until its next element.
  static constexpr int kMaxOpenShards = internal::kMaxOpenShards;

  const std::string& dir() const { return dir_; }

 private:
  SavedDatasetWriter(std::string dir, proto::SavedDatasetManifest manifest,
                     SavedWriteOptions options);
  // Closes the shards and puts the manifest in place; `replaced`: the runs it takes the place of.
  absl::Status CommitShardsAndManifest(std::set<std::string>* replaced);
  void RemoveOtherRuns(const std::set<std::string>& replaced) const;
  // Removes this run's shard files, committed or not.
  void RemoveOwnShards();

  std::string dir_;
  proto::SavedDatasetManifest manifest_;
  SavedWriteOptions options_;
  std::map<int64_t, std::unique_ptr<TFRecordWriter>> shards_;  // by shard id
  std::map<int64_t, int64_t> shard_elements_;
  std::map<int64_t, int64_t> open_shards_;  // shards not parked: the element each last took
  int64_t elements_ = 0;
  int64_t started_ns_ = 0;
  std::string record_;
  bool finished_ = false;  // the manifest naming this run is in place
};

// What is saved in `dir`: no manifest (nullopt, invalid empty), a usable one, or one that is no
// good (invalid says why: unreadable, or its shards disagree with it).
struct OpenedSaved {
  std::optional<proto::SavedDatasetManifest> manifest;
  std::string invalid;
  std::string run_id;  // the run a manifest of this version names, even an invalid one
};
absl::StatusOr<OpenedSaved> OpenSaved(const std::string& dir);

// Takes run `run_id` of `dir` out of use after reading it found it damaged: its manifest is
// renamed to kDamagedManifestName, so that the next Snapshot of `dir` writes a new run, whose
// Finish removes the damaged one. False, and nothing done, when the manifest names another run
// (rewritten since, or taken out of use already) or there is none.
absl::StatusOr<bool> InvalidateSaved(const std::string& dir, const std::string& run_id);

// Reads a saved dataset: each shard a TFRecord of its elements, combined by `reader_fn`, or
// round-robin in the manifest's order, kMaxOpenShards at a time (which gives a round-robin write
// of up to that many shards back in its order). The reading pipeline is an inner pipeline of the
// Load or Snapshot node that owns this reader.
class SavedDatasetReader {
 public:
  static absl::StatusOr<std::unique_ptr<SavedDatasetReader>> Create(
      const DatasetBase* owner, const IteratorContext& ctx, std::string dir,
      proto::SavedDatasetManifest manifest, const ReaderFn& reader_fn);

  absl::StatusOr<std::optional<Element>> GetNext() { return input_->GetNext(); }
  // The run id beside the reading pipeline's state, in the owner's `state` (as its input 0): a
  // checkpoint restores only into the same saved files.
  absl::Status Save(proto::IteratorStateProto* state);
  absl::Status Restore(const proto::IteratorStateProto& state);

  const proto::SavedDatasetManifest& manifest() const { return manifest_; }

 private:
  SavedDatasetReader(const DatasetBase* owner, std::string dir,
                     proto::SavedDatasetManifest manifest)
      : owner_(owner), dir_(std::move(dir)), manifest_(std::move(manifest)) {}

  const DatasetBase* owner_;
  std::string dir_;
  proto::SavedDatasetManifest manifest_;
  std::shared_ptr<const DatasetBase> pipeline_;  // declared first: outlives its iterator
  std::unique_ptr<IteratorBase> input_;
};

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_SAVED_DATASET_H_
