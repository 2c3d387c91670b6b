#include "train/data/image_dataset_from_directory.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/os_error.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "ops/counter_rng.h"
#include "ops/decode_and_resize.h"
#include "ops/normalize.h"
#include "ops/read_file.h"

namespace sluice::train::data {
namespace {

namespace fs = std::filesystem;
using Options = ImageDirectoryOptions;

bool IsImageFile(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const char* ext : {".jpg", ".jpeg", ".png", ".bmp", ".gif"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

absl::Status FsError(const std::error_code& error, const std::string& path) {
  return OsError(error.value(), path);  // "path: strerror"
}

// Appends the image files under `dir` in Keras' order (sorted(os.walk(dir)), then sorted names):
// every directory's files come before those of the directories after it in path order.
// `visited` holds (device, inode) of the directories entered, so a symlink loop ends.
absl::Status Walk(const std::string& dir, bool follow_links,
                  std::set<std::pair<dev_t, ino_t>>& visited, std::vector<std::string>& out) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !visited.insert({st.st_dev, st.st_ino}).second) {
    return absl::OkStatus();
  }
  std::vector<std::string> files, subdirs;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    std::error_code ignored;
    const bool is_link = entry.is_symlink(ignored);
    if (entry.is_directory(ignored)) {
      if (!is_link || follow_links) subdirs.push_back(name);
    } else if (IsImageFile(name)) {
      files.push_back(name);
    }
  }
  if (error) return FsError(error, dir);
  std::sort(files.begin(), files.end());
  std::sort(subdirs.begin(), subdirs.end());
  for (const std::string& f : files) out.push_back(absl::StrCat(dir, "/", f));
  for (const std::string& d : subdirs) {
    SLUICE_RETURN_IF_ERROR(Walk(absl::StrCat(dir, "/", d), follow_links, visited, out));
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const Options& o) {
  if (o.image_height <= 0 || o.image_width <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("image_size must be positive, got ", o.image_height, "x", o.image_width));
  }
  if (o.batch_size.has_value() && *o.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be at least 1 (or unset: unbatched), got ", *o.batch_size));
  }
  if (!(o.validation_split >= 0 && o.validation_split < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("validation_split must be in [0, 1), got ", o.validation_split));
  }
  if ((o.validation_split > 0) != (o.subset != Options::Subset::kAll)) {
    return absl::InvalidArgumentError(
        "validation_split and subset go together: set both (subset training or validation) or "
        "neither");
  }
  if (o.validation_split > 0 && o.shuffle && !o.seed.has_value()) {
    return absl::InvalidArgumentError(
        "validation_split with shuffle needs a seed, so that the training and validation "
        "subsets are disjoint (as Keras asks, for two calls or for subset=\"both\")");
  }
  if (!o.class_names.empty() && o.labels != Options::Labels::kInferred) {
    return absl::InvalidArgumentError("class_names applies to inferred labels only");
  }
  if (o.labels != Options::Labels::kExplicit && !o.explicit_labels.empty()) {
    return absl::InvalidArgumentError("explicit_labels needs labels = Labels::kExplicit");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageDirectoryIndex> IndexImageDirectory(const std::string& directory,
                                                        const ImageDirectoryOptions& options) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    if (error && error != std::errc::no_such_file_or_directory) return FsError(error, directory);
    if (fs::exists(directory, error)) {
      return WithErrno(absl::FailedPreconditionError(absl::StrCat(
                           directory, ": not a directory (a folder of one folder per class)")),
                       ENOTDIR);
    }
    return absl::NotFoundError(absl::StrCat(directory, ": no such directory"));
  }
  ImageDirectoryIndex index;
  if (options.labels != Options::Labels::kInferred) {
    std::set<std::pair<dev_t, ino_t>> visited;
    SLUICE_RETURN_IF_ERROR(Walk(directory, options.follow_links, visited, index.files));
  } else {
    std::vector<std::string> subdirs;
    for (fs::directory_iterator it(directory, error), end; !error && it != end;
         it.increment(error)) {
      const std::string name = it->path().filename().string();
      std::error_code ignored;
      if (it->is_directory(ignored) && name[0] != '.') subdirs.push_back(name);
    }
    if (error) return FsError(error, directory);
    std::sort(subdirs.begin(), subdirs.end());
    if (!options.class_names.empty()) {
      for (const std::string& name : options.class_names) {
        if (!std::binary_search(subdirs.begin(), subdirs.end(), name)) {
          return absl::InvalidArgumentError(
              absl::StrCat("class_names has '", name, "', which is not a subdirectory of ",
                           directory, " (it has: ", absl::StrJoin(subdirs, ", "), ")"));
        }
      }
      subdirs = options.class_names;
    }
    for (size_t label = 0; label < subdirs.size(); ++label) {
      // Per class: a folder linked into two classes is walked for each.
      std::set<std::pair<dev_t, ino_t>> visited;
      SLUICE_RETURN_IF_ERROR(Walk(absl::StrCat(directory, "/", subdirs[label]),
                                  options.follow_links, visited, index.files));
      index.labels.resize(index.files.size(), static_cast<int64_t>(label));
    }
    index.class_names = std::move(subdirs);
  }
  if (index.files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no image files (.jpg, .jpeg, .png, .bmp, .gif) in ", directory,
        options.labels == Options::Labels::kInferred ? "'s class subdirectories" : ""));
  }
  if (options.labels == Options::Labels::kExplicit) {
    if (options.explicit_labels.size() != index.files.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "explicit_labels has ", options.explicit_labels.size(), " labels but ", directory,
          " has ", index.files.size(), " image files (one label per file, in sorted path order)"));
    }
    std::set<int64_t> distinct;
    for (int64_t label : options.explicit_labels) {
      if (label < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("explicit_labels must be >= 0, got ", label));
      }
      distinct.insert(label);
    }
    index.labels = options.explicit_labels;
    for (int64_t label : distinct) index.class_names.push_back(absl::StrCat(label));
  }
  return index;
}

namespace {

// The labels fit label_mode: two classes for kBinary, every label below the number of classes
// for kCategorical.
absl::Status CheckLabelMode(const ImageDirectoryIndex& index, const Options& options) {
  const int64_t num_classes = static_cast<int64_t>(index.class_names.size());
  if (options.label_mode == Options::LabelMode::kBinary && num_classes != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("label_mode binary needs exactly 2 classes, but there are ", num_classes, " (",
                     absl::StrJoin(index.class_names, ", "), ")"));
  }
  if (options.label_mode == Options::LabelMode::kCategorical) {
    for (int64_t label : index.labels) {
      if (label >= num_classes) {
        return absl::InvalidArgumentError(absl::StrCat("label_mode categorical: label ", label,
                                                       " is not below the number of "
                                                       "distinct labels (",
                                                       num_classes, ")"));
      }
    }
  }
  return absl::OkStatus();
}

// The files' indices in the order the dataset lists them: as found, or shuffled by `seed`.
std::vector<size_t> FileOrder(size_t total, bool shuffle, uint64_t seed) {
  std::vector<size_t> order(total);
  for (size_t i = 0; i < total; ++i) order[i] = i;
  if (shuffle) {  // Fisher-Yates, from a seeded counter-based generator.
    CounterRng rng(seed, kFileOrderStream);
    for (size_t i = total; i > 1; --i) std::swap(order[i - 1], order[rng.UniformInt(i)]);
  }
  return order;
}

// The positions [begin, end) in the file order of the subset the options ask for.
absl::StatusOr<std::pair<size_t, size_t>> SubsetRange(size_t total, const Options& options) {
  const size_t num_validation = static_cast<size_t>(options.validation_split * total);
  size_t begin = 0, end = total;
  if (options.subset == Options::Subset::kTraining) end = total - num_validation;
  if (options.subset == Options::Subset::kValidation) begin = total - num_validation;
  if (begin == end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation_split ", options.validation_split, " of ", total, " files leaves the ",
        options.subset == Options::Subset::kTraining ? "training" : "validation", " subset empty"));
  }
  if (options.verbose && options.subset != Options::Subset::kAll) {
    std::fprintf(stderr, "Using %zu files for %s.\n", end - begin,
                 options.subset == Options::Subset::kTraining ? "training" : "validation");
  }
  return std::make_pair(begin, end);
}

// The image at `path`, float32 and unrounded, as Keras' (tf.image.resize's) result; errors name
// the path.
absl::StatusOr<Tensor> LoadImage(const std::string& path, int64_t height, int64_t width,
                                 const DecodeAndResizeOptions& decode) {
  absl::StatusOr<Tensor> image = [&]() -> absl::StatusOr<Tensor> {
    SLUICE_ASSIGN_OR_RETURN(const Tensor bytes, ReadFile(path));
    return DecodeAndResize(bytes.scalar<std::string>(), height, width, decode,
                           {.round_to_uint8 = false});
  }();
  if (image.ok()) return image;
  // ReadFile's errors name the path already; decode errors do not.
  if (absl::StrContains(image.status().message(), path)) return image.status();
  return WithContext(image.status(), absl::StrCat(path, ": "));
}

// Appends `label` to `out` as label_mode has it: an int32, a one-hot float32 vector, or a float32
// [1] of 0 or 1; kNone appends nothing.
void AppendLabel(int32_t label, Options::LabelMode mode, int64_t num_classes, Element& out) {
  switch (mode) {
    case Options::LabelMode::kInt:
      out.push_back(Tensor::Scalar<int32_t>(label));
      break;
    case Options::LabelMode::kCategorical: {
      Tensor one_hot = Tensor::Zeros(DType::kFloat32, Shape{num_classes});
      one_hot.data<float>()[label] = 1.0f;
      out.push_back(std::move(one_hot));
      break;
    }
    case Options::LabelMode::kBinary:
      out.push_back(Tensor::FromVector<float>({static_cast<float>(label)}));
      break;
    case Options::LabelMode::kNone:
      break;
  }
}

}  // namespace

namespace {

// The tree, indexed and checked once, and the file order of its first shuffle: what every subset
// of one call (subset="both" makes two) is taken from.
struct IndexedTree {
  ImageDirectoryIndex index;
  bool labeled = false;
  uint64_t seed = 0;
  std::vector<size_t> order;
};

absl::StatusOr<IndexedTree> IndexTree(const std::string& directory, const Options& options) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(options));
  IndexedTree tree;
  SLUICE_ASSIGN_OR_RETURN(tree.index, IndexImageDirectory(directory, options));
  tree.labeled =
      options.labels != Options::Labels::kNone && options.label_mode != Options::LabelMode::kNone;
  if (tree.labeled) SLUICE_RETURN_IF_ERROR(CheckLabelMode(tree.index, options));
  const size_t total = tree.index.files.size();
  if (options.verbose) {
    if (options.labels == Options::Labels::kNone) {
      std::fprintf(stderr, "Found %zu files.\n", total);
    } else {
      std::fprintf(stderr, "Found %zu files belonging to %zu classes.\n", total,
                   tree.index.class_names.size());
    }
  }
  tree.seed = options.seed.has_value() ? *options.seed : std::random_device{}();
  tree.order = FileOrder(total, options.shuffle, tree.seed);
  return tree;
}

// The dataset of `tree`'s subset `options.subset`.
absl::StatusOr<ImageDirectoryDataset> SubsetDataset(const IndexedTree& tree,
                                                    const Options& options) {
  const bool labeled = tree.labeled;
  const int64_t num_classes = static_cast<int64_t>(tree.index.class_names.size());
  SLUICE_ASSIGN_OR_RETURN(const auto subset, SubsetRange(tree.index.files.size(), options));
  const auto [begin, end] = subset;
  const int64_t n = static_cast<int64_t>(end - begin);
  Tensor paths(DType::kBytes, Shape{n});
  Tensor labels(DType::kInt32, Shape{n});
  std::vector<std::string> files;
  for (int64_t i = 0; i < n; ++i) {
    const size_t file = tree.order[begin + static_cast<size_t>(i)];
    paths.data<std::string>()[i] = tree.index.files[file];
    labels.data<int32_t>()[i] = labeled ? static_cast<int32_t>(tree.index.labels[file]) : 0;
    files.push_back(tree.index.files[file]);
  }
  Dataset dataset =
      labeled ? Dataset::FromTensorSlices({paths, labels}) : Dataset::FromTensorSlices({paths});
  if (options.shuffle) dataset = dataset.Shuffle(n, {.seed = tree.seed});

  const int channels = options.color_mode == Options::ColorMode::kGrayscale ? 1 : 3;
  const DecodeAndResizeOptions decode{.channels = channels,
                                      .crop_to_aspect_ratio = options.crop_to_aspect_ratio,
                                      .dct_scaling = options.dct_scaling,
                                      .method = options.interpolation};
  const int64_t height = options.image_height, width = options.image_width;
  const Options::LabelMode mode = options.label_mode;
  dataset = dataset.Map(
      [=](Element element) -> absl::StatusOr<Element> {
        SLUICE_ASSIGN_OR_RETURN(Tensor image,
                                LoadImage(element[0].scalar<std::string>(), height, width, decode));
        Element out{std::move(image)};
        if (labeled) AppendLabel(element[1].scalar<int32_t>(), mode, num_classes, out);
        return out;
      },
      {.num_parallel_calls = options.num_parallel_calls});
  if (options.skip_errors) dataset = dataset.IgnoreErrors(options.on_skipped);
  if (options.batch_size.has_value()) dataset = dataset.Batch(*options.batch_size);
  return ImageDirectoryDataset{.dataset = dataset.Prefetch(),
                               .class_names = tree.index.class_names,
                               .files = std::move(files)};
}

}  // namespace

absl::StatusOr<ImageDirectoryDataset> ImageDatasetFromDirectory(
    const std::string& directory, const ImageDirectoryOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const IndexedTree tree, IndexTree(directory, options));
  return SubsetDataset(tree, options);
}

absl::StatusOr<std::pair<ImageDirectoryDataset, ImageDirectoryDataset>> ImageDatasetsFromDirectory(
    const std::string& directory, const ImageDirectoryOptions& options) {
  if (options.subset != Options::Subset::kAll) {
    return absl::InvalidArgumentError(
        "ImageDatasetsFromDirectory makes both subsets: leave subset unset (kAll) and set "
        "validation_split");
  }
  if (!(options.validation_split > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subset=\"both\" needs a validation_split in (0, 1), not ", options.validation_split));
  }
  Options training = options;
  training.subset = Options::Subset::kTraining;
  SLUICE_ASSIGN_OR_RETURN(const IndexedTree tree, IndexTree(directory, training));
  SLUICE_ASSIGN_OR_RETURN(ImageDirectoryDataset train, SubsetDataset(tree, training));
  Options validation = training;
  validation.subset = Options::Subset::kValidation;
  SLUICE_ASSIGN_OR_RETURN(ImageDirectoryDataset valid, SubsetDataset(tree, validation));
  return std::make_pair(std::move(train), std::move(valid));
}

}  // namespace sluice::train::data
