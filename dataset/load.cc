// Dataset::Load(path, options), as tf.data's load: the elements Save (or Snapshot) wrote to a
// saved dataset directory (dataset/saved_dataset.h), and the element_spec its manifest records.
// A directory without a manifest is NotFound; one whose manifest or shards are damaged is
// DataLoss, naming what is wrong. Checkpoints hold the reading pipeline's position and the run
// they read.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/saved_dataset.h"

namespace sluice {
namespace {

class LoadDataset : public DatasetBase {
 public:
  LoadDataset(std::string path, LoadOptions options)
      : DatasetBase("Load", {}), path_(std::move(path)), options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  std::string Describe() const override { return absl::StrCat("Load(", path_, ")"); }
  // The manifest's count as it is now; unknown where a reader_fn may yield other elements, or
  // nothing usable is saved yet (iterating says why).
  int64_t Cardinality() const override {
    if (options_.reader_fn) return kUnknownCardinality;
    absl::StatusOr<internal::OpenedSaved> opened = internal::OpenSaved(path_);
    if (!opened.ok() || !opened->manifest || !opened->invalid.empty()) return kUnknownCardinality;
    return opened->manifest->elements();
  }

 protected:
  // The user's, or the manifest's as it is when first asked (unknown when there is none yet, or
  // it cannot be read: iterating then says why).
  ElementSpec ComputeElementSpec() const override {
    if (options_.element_spec) return *options_.element_spec;
    absl::StatusOr<internal::OpenedSaved> opened = internal::OpenSaved(path_);
    if (!opened.ok() || !opened->manifest) return ElementSpec();
    absl::StatusOr<ElementSpec> saved = internal::SavedElementSpec(*opened->manifest, path_);
    return saved.ok() ? *saved : ElementSpec();
  }

 private:
  class LoadIterator : public IteratorBase {
   public:
    LoadIterator(const LoadDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource) {}
    std::unique_ptr<internal::SavedDatasetReader> reader;

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override { return reader->GetNext(); }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      return reader->Save(state);
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      return reader->Restore(state);
    }
  };

  std::string path_;
  LoadOptions options_;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> LoadDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(internal::OpenedSaved opened, internal::OpenSaved(path_));
  if (!opened.invalid.empty()) {
    return absl::DataLossError(absl::StrCat(name(), ": cannot load ", path_, ": ", opened.invalid));
  }
  if (!opened.manifest) {
    return absl::NotFoundError(absl::StrCat(name(), ": no saved dataset in ", path_, " (no ",
                                            internal::kManifestName,
                                            ": never saved, or the save did not finish)"));
  }
  SLUICE_ASSIGN_OR_RETURN(const ElementSpec saved,
                          internal::SavedElementSpec(*opened.manifest, path_));
  if (!saved.IsCompatibleWith(element_spec())) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), ": ", path_, " holds elements ", saved.DebugString(),
                     ", but this dataset's are ", element_spec().DebugString(),
                     options_.element_spec ? " (LoadOptions::element_spec)"
                                           : " (as saved there when this Load first read it)"));
  }
  auto it = std::make_unique<LoadIterator>(this, ctx);
  SLUICE_ASSIGN_OR_RETURN(it->reader,
                          internal::SavedDatasetReader::Create(
                              this, ctx, path_, std::move(*opened.manifest), options_.reader_fn));
  return std::unique_ptr<IteratorBase>(std::move(it));
}

}  // namespace

Dataset Dataset::Load(std::string path, LoadOptions options) {
  return Dataset(std::make_shared<LoadDataset>(std::move(path), std::move(options)));
}

}  // namespace sluice
