// Snapshot(path, options), as tf.data's snapshot. Each pipeline's snapshot is a saved dataset in
// path/<SnapshotKey> (a hash of its description and input files' paths, or of the user's
// fingerprint), as tf.data keeps
// path/<hash>. When the iterator is made, that directory is looked at: a complete snapshot of
// this pipeline (same description and input files, or the user's fingerprint) is read; anything
// else (no snapshot, a stale or damaged one) means reading the input and writing a new snapshot as
// the elements pass. The old snapshot stays readable until the new one's manifest replaces it
// (dataset/saved_dataset.h), and a pass that fails or stops early writes nothing: a half-written
// snapshot is never read. A snapshot found damaged while read (DataLoss) fails that pass and is
// taken out of use, so that the next pass rewrites it.
//
// As Cache, failing to write is a warning, not an error. Checkpoints: reading, the reader's
// position and the snapshot's run; writing, the input's position. A pass restored part-way does
// not write (elements before the restore are in no file); one restored at its start does.
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/saved_dataset.h"
#include "dataset/write_through.h"

namespace sluice {
namespace {

void Warn(const std::string& message) {
  std::fprintf(stderr, "sluice: warning: %s\n", message.c_str());
}

class SnapshotDataset : public DatasetBase {
 public:
  SnapshotDataset(std::shared_ptr<const DatasetBase> input, std::string path,
                  SnapshotOptions options)
      : DatasetBase("Snapshot", {std::move(input)}),
        path_(std::move(path)),
        options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override { return absl::StrCat("Snapshot(", path_, ")"); }

  const SnapshotOptions& snapshot_options() const { return options_; }

 private:
  std::string path_;
  SnapshotOptions options_;
  mutable std::once_flag warned_top_level_;
};

class SnapshotIterator : public IteratorBase {
 public:
  // Reads `reader` when given, else reads `input`, writing a snapshot described by `identity`.
  SnapshotIterator(const SnapshotDataset* d, const IteratorContext& ctx, std::string dir,
                   proto::SavedDatasetManifest identity,
                   std::unique_ptr<internal::SavedDatasetReader> reader,
                   std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync),
        d_(d),
        dir_(std::move(dir)),
        identity_(std::move(identity)),
        reader_(std::move(reader)),
        input_(std::move(input)),
        write_(
            [this] {
              const SnapshotOptions& o = d_->snapshot_options();
              return internal::SavedDatasetWriter::Create(dir_, identity_,
                                                          {.compression = o.compression,
                                                           .num_shards = o.num_shards,
                                                           .shard_fn = o.shard_fn});
            },
            // The snapshot is an optimisation: failing to write it is worth a warning.
            [this](const absl::Status& why) {
              Warn(absl::StrCat(name(), ": cannot write snapshot ", dir_, " (", why.message(),
                                "); going on without it"));
            },
            /*may_write=*/reader_ == nullptr) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    if (reader_ != nullptr) {
      absl::StatusOr<std::optional<Element>> e = reader_->GetNext();
      if (!e.ok()) {
        if (absl::IsDataLoss(e.status())) TakeOutOfUse(e.status());
        return e.status();
      }
      if (*e) ++position_;
      return e;
    }
    if (input_ == nullptr) return std::nullopt;
    absl::StatusOr<std::optional<Element>> in = write_.Pass(*input_);
    if (in.ok() && !in->has_value()) input_.reset();
    if (in.ok() && in->has_value()) ++position_;
    return in;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["reading"] = reader_ != nullptr;
    ints["position"] = position_;
    if (reader_ != nullptr) return reader_->Save(state);
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(const int64_t reading, SavedInt(state, "reading"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t position, SavedInt(state, "position"));
    if (position < 0) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", state.node(), " is at element ", position));
    }
    if (reading != 0) {
      if (reader_ == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(name(), ": the checkpoint was reading snapshot ", dir_, " at element ",
                         position, ", but the snapshot is gone or stale now"));
      }
      position_ = position;
      return reader_->Restore(state);
    }
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    // Nothing read yet: a complete snapshot made since serves as well as the input.
    if (position == 0 && reader_ != nullptr) return absl::OkStatus();
    position_ = position;
    reader_.reset();
    // Elements before the restore are in no file: only a pass restored at its start writes.
    write_.Reset(/*may_write=*/in != nullptr && position == 0);
    if (in == nullptr) {  // The pass had ended.
      input_.reset();
      return absl::OkStatus();
    }
    if (input_ == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(input_, d_->inputs()[0]->MakeIterator(ctx()));
    }
    return input_->Restore(*in);
  }

 private:
  // A damaged snapshot (a record that fails its checksum or is not the input's element) would
  // fail at the same place every pass and every run: the next pass writes a new one instead.
  // The cache file does the same. Once per iterator: IgnoreErrors reads on past the error.
  void TakeOutOfUse(const absl::Status& why) {
    if (took_out_of_use_) return;
    took_out_of_use_ = true;
    absl::StatusOr<bool> done = internal::InvalidateSaved(dir_, reader_->manifest().run_id());
    if (!done.ok()) {
      Warn(absl::StrCat(name(), ": snapshot ", dir_, " is damaged (", why.message(),
                        ") and cannot be taken out of use: ", done.status().message()));
    } else if (*done) {
      Warn(absl::StrCat(name(), ": snapshot ", dir_, " is damaged (", why.message(),
                        "); the next pass writes a new one"));
    }
  }

  const SnapshotDataset* d_;
  const std::string dir_;  // this pipeline's snapshot: path/<SnapshotKey>
  proto::SavedDatasetManifest identity_;
  std::unique_ptr<internal::SavedDatasetReader> reader_;  // reading when set
  std::unique_ptr<IteratorBase> input_;                   // writing; null when reading or ended
  internal::WriteThrough<internal::SavedDatasetWriter> write_;
  int64_t position_ = 0;  // elements returned
  bool took_out_of_use_ = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> SnapshotDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (path_.empty()) return absl::InvalidArgumentError(absl::StrCat(name(), ": no path"));
  SLUICE_ASSIGN_OR_RETURN(proto::SavedDatasetManifest identity,
                          internal::DescribeSavedInput(*inputs()[0], options_.fingerprint));
  // A saved dataset at the top of `path`: Save's, or a snapshot from before the subdirectories.
  // Never read here, and never removed (it may be a Save the user wants): said once.
  const std::filesystem::path top_manifest = std::filesystem::path(path_) / internal::kManifestName;
  if (std::error_code ec; std::filesystem::exists(top_manifest, ec)) {
    std::call_once(warned_top_level_, [&] {
      Warn(absl::StrCat(name(), ": ", path_,
                        " holds a saved dataset at its top level (Save's, or a snapshot written "
                        "before snapshots moved to subdirectories); Snapshot reads and writes ",
                        path_, "/<16 hex digits> instead. Remove ", top_manifest.string(),
                        " and the shard-* files beside it if nothing else reads them"));
    });
  }
  std::string dir = (std::filesystem::path(path_) / internal::SnapshotKey(identity)).string();
  SLUICE_ASSIGN_OR_RETURN(internal::OpenedSaved opened, internal::OpenSaved(dir));
  std::string why = opened.invalid;
  if (opened.manifest) {
    // Another pipeline's only when their keys collide.
    why = internal::StaleReason(*opened.manifest, identity);
    if (why.empty()) {
      SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<internal::SavedDatasetReader> reader,
                              internal::SavedDatasetReader::Create(
                                  this, ctx, dir, std::move(*opened.manifest), options_.reader_fn));
      return std::unique_ptr<IteratorBase>(new SnapshotIterator(
          this, ctx, std::move(dir), std::move(identity), std::move(reader), nullptr));
    }
  }
  if (!why.empty()) {
    Warn(absl::StrCat(name(), ": rewriting snapshot ", dir, ": ", why));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new SnapshotIterator(
      this, ctx, std::move(dir), std::move(identity), nullptr, std::move(input)));
}

}  // namespace

Dataset Dataset::Snapshot(std::string path, SnapshotOptions options) const {
  return Dataset(std::make_shared<SnapshotDataset>(base(), std::move(path), std::move(options)));
}

}  // namespace sluice
