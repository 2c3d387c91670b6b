// ListFiles(patterns, {shuffle, seed}): the file names matching the glob
// patterns, as scalar bytes tensors, like tf.data.Dataset.list_files. The
// patterns are expanded when an iterator is made (io/glob.h: sorted bytewise,
// without duplicates; NotFound only when no pattern matches anything). With
// shuffle (the default, as in tf.data), the names come in a seeded permutation: the seed option
// (else the pipeline seed) mixed with the iterator's salt, so that each repetition under Repeat
// gets its own order, reproducibly. Options::file_shard keeps one shard of the sorted list, before
// the shuffle.
#include "dataset/list_files.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "io/glob.h"

namespace sluice {
namespace {

// A uniform draw in [0, n): rejection sampling over mt19937_64, whose output
// the C++ standard fixes (std::uniform_int_distribution and std::shuffle are
// not, so they would give other orders with another standard library).
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

// Fisher-Yates.
void Permute(std::vector<std::string>* v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = v->size(); i > 1; --i) {
    std::swap((*v)[i - 1], (*v)[UniformBelow(rng, i)]);
  }
}

class ListFilesDataset : public DatasetBase {
 public:
  ListFilesDataset(std::vector<std::string> patterns, ListFilesOptions options)
      : DatasetBase("ListFiles", {}), patterns_(std::move(patterns)), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    if (patterns_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": no file patterns given"));
    }
    absl::StatusOr<std::vector<std::string>> files = ListFilesMatching(patterns_);
    if (!files.ok()) {
      return WithContext(files.status(), absl::StrCat(name(), ": "));
    }
    if (const std::optional<FileShard>& shard = ctx.options.file_shard) {
      if (shard->num_shards < 1 || shard->index < 0 || shard->index >= shard->num_shards) {
        return absl::InvalidArgumentError(absl::StrCat(name(), ": file shard ", shard->index,
                                                       " of ", shard->num_shards, " is invalid"));
      }
      std::vector<std::string> kept;
      for (size_t i = shard->index; i < files->size(); i += shard->num_shards) {
        kept.push_back(std::move((*files)[i]));
      }
      *files = std::move(kept);
    }
    if (options_.shuffle) {
      Permute(&*files, MixSeed(options_.seed.value_or(ctx.seed), ctx.salt));
    }
    return std::unique_ptr<IteratorBase>(new ListFilesIterator(this, ctx, std::move(*files)));
  }
  ElementSpec ComputeElementSpec() const override { return {{DType::kBytes, {}}}; }
  const std::vector<std::string>& patterns() const { return patterns_; }
  absl::Status AppendSourceFiles(std::vector<std::string>* files) const override {
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> matched, ListFilesMatching(patterns_));
    files->insert(files->end(), matched.begin(), matched.end());
    return absl::OkStatus();
  }
  std::string Describe() const override {
    std::string s = absl::StrCat("ListFiles(", absl::StrJoin(patterns_, ", "));
    if (!options_.shuffle) absl::StrAppend(&s, ", sorted");
    if (options_.shuffle && options_.seed) absl::StrAppend(&s, ", seed=", *options_.seed);
    return s + ")";
  }

 private:
  class ListFilesIterator : public IteratorBase {
   public:
    ListFilesIterator(const ListFilesDataset* d, const IteratorContext& ctx,
                      std::vector<std::string> files)
        : IteratorBase(d, ctx, NodeKind::kSource), files_(std::move(files)) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (next_ >= static_cast<int64_t>(files_.size())) return std::nullopt;
      return Element{Tensor::Scalar<std::string>(files_[next_++])};
    }
    // The list itself is saved, so that the position keeps its meaning even
    // if files are added or removed before the restore.
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["next"] = next_;
      (*state->mutable_ints())["files"] = static_cast<int64_t>(files_.size());
      (*state->mutable_blobs())["files"] = absl::StrJoin(files_, std::string(1, '\0'));
      return absl::OkStatus();
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t next, SavedInt(state, "next"));
      SLUICE_ASSIGN_OR_RETURN(int64_t count, SavedInt(state, "files"));
      auto blob = state.blobs().find("files");
      if (blob == state.blobs().end()) {
        return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " lacks 'files'"));
      }
      std::vector<std::string> files;
      if (count > 0) files = absl::StrSplit(blob->second, '\0');
      if (static_cast<int64_t>(files.size()) != count || next < 0 || next > count) {
        return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " holds ",
                                                files.size(), " file names, expected ", count,
                                                ", at position ", next));
      }
      files_ = std::move(files);
      next_ = next;
      return absl::OkStatus();
    }
    // The file's place in this iterator's (shuffled) list.
    bool DescribeLastInternal(ElementSource* out) override {
      out->push_back(next_ - 1);
      return true;
    }
    absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t i,
                              source.NextIn(name(), 0, static_cast<int64_t>(files_.size())));
      return Element{Tensor::Scalar<std::string>(files_[i])};
    }

   private:
    std::vector<std::string> files_;
    int64_t next_ = 0;
  };

  std::vector<std::string> patterns_;
  ListFilesOptions options_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> ListFilesMatching(
    const std::vector<std::string>& patterns) {
  // A list of optional extra shards works as in tf.data: one pattern matching nothing (or whose
  // directory does not exist) is NotFound alone; any other error, such as an unreadable
  // directory, still fails.
  std::vector<std::string> files;
  absl::Status not_found;
  for (const std::string& pattern : patterns) {
    absl::StatusOr<std::vector<std::string>> matched = Glob(pattern);
    if (matched.ok()) {
      files.insert(files.end(), std::make_move_iterator(matched->begin()),
                   std::make_move_iterator(matched->end()));
    } else if (absl::IsNotFound(matched.status())) {
      not_found = matched.status();
    } else {
      return matched.status();
    }
  }
  if (files.empty() && !not_found.ok()) {
    // One pattern: Glob's own message says whether it was a pattern or a path.
    if (patterns.size() == 1) return not_found;
    return absl::NotFoundError(absl::StrCat("no files match any of the ", patterns.size(),
                                            " patterns '", absl::StrJoin(patterns, "', '"), "'"));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

const std::vector<std::string>* ListFilesPatterns(const DatasetBase& node) {
  const auto* list = dynamic_cast<const ListFilesDataset*>(&node);
  return list != nullptr ? &list->patterns() : nullptr;
}

Dataset Dataset::ListFiles(std::vector<std::string> patterns, ListFilesOptions options) {
  return Dataset(std::make_shared<ListFilesDataset>(std::move(patterns), options));
}

Dataset Dataset::ListFiles(std::string pattern, ListFilesOptions options) {
  return ListFiles(std::vector<std::string>{std::move(pattern)}, options);
}

}  // namespace sluice
