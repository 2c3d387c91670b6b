#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "python/dataset_binding.h"
#include "python/errors.h"
#include "train/data/image_dataset_from_directory.h"

// sluice.image_dataset_from_directory: keras.utils.image_dataset_from_directory's signature over
// the C++ ImageDatasetFromDirectory.
namespace sluice::python {

namespace py = pybind11;

namespace {

using train::data::ImageDirectoryOptions;

py::object DatasetWithAttributes(train::data::ImageDirectoryDataset d) {
  py::object dataset = py::cast(PyDataset{std::move(d.dataset)});
  // What Keras attaches to the dataset it returns.
  dataset.attr("class_names") = d.class_names;
  dataset.attr("file_paths") = d.files;
  return dataset;
}

py::object Make(const std::string& directory, ImageDirectoryOptions options) {
  absl::StatusOr<train::data::ImageDirectoryDataset> d =
      train::data::ImageDatasetFromDirectory(directory, options);
  if (!d.ok()) ThrowStatus(d.status());
  return DatasetWithAttributes(*std::move(d));
}

}  // namespace

void RegisterImageDirectory(py::module_& m) {
  m.def(
      "image_dataset_from_directory",
      [](const FilePath& directory, const py::object& labels, const py::object& label_mode,
         const std::optional<std::vector<std::string>>& class_names, const std::string& color_mode,
         std::optional<int64_t> batch_size, std::pair<int64_t, int64_t> image_size, bool shuffle,
         std::optional<uint64_t> seed, std::optional<double> validation_split,
         std::optional<std::string> subset, const std::string& interpolation, bool follow_links,
         bool crop_to_aspect_ratio, bool verbose) -> py::object {
        ImageDirectoryOptions o;
        if (labels.is_none()) {
          o.labels = ImageDirectoryOptions::Labels::kNone;
        } else if (py::isinstance<py::str>(labels)) {
          if (labels.cast<std::string>() != "inferred") {
            throw py::value_error("labels: 'inferred', None, or a list of ints");
          }
        } else {
          o.labels = ImageDirectoryOptions::Labels::kExplicit;
          o.explicit_labels = labels.cast<std::vector<int64_t>>();
        }
        const std::string mode = label_mode.is_none() ? "none" : label_mode.cast<std::string>();
        if (mode == "int") {
          o.label_mode = ImageDirectoryOptions::LabelMode::kInt;
        } else if (mode == "categorical") {
          o.label_mode = ImageDirectoryOptions::LabelMode::kCategorical;
        } else if (mode == "binary") {
          o.label_mode = ImageDirectoryOptions::LabelMode::kBinary;
        } else if (mode == "none") {
          o.label_mode = ImageDirectoryOptions::LabelMode::kNone;
        } else {
          throw py::value_error("label_mode: 'int', 'categorical', 'binary' or None");
        }
        if (class_names) o.class_names = *class_names;
        if (color_mode == "rgb") {
          o.color_mode = ImageDirectoryOptions::ColorMode::kRgb;
        } else if (color_mode == "grayscale") {
          o.color_mode = ImageDirectoryOptions::ColorMode::kGrayscale;
        } else {
          throw py::value_error("color_mode: 'rgb' or 'grayscale' (JPEG has no alpha)");
        }
        o.batch_size = batch_size;
        o.image_height = image_size.first;
        o.image_width = image_size.second;
        o.shuffle = shuffle;
        o.seed = seed;
        o.validation_split = validation_split.value_or(0);
        if (interpolation == "bilinear") {
          o.interpolation = ResizeMethod::kBilinear;
        } else if (interpolation == "area") {
          o.interpolation = ResizeMethod::kArea;
        } else {
          throw py::value_error("interpolation: 'bilinear' or 'area'");
        }
        o.follow_links = follow_links;
        o.crop_to_aspect_ratio = crop_to_aspect_ratio;
        o.verbose = verbose;
        if (!subset) return Make(directory.value, o);
        if (*subset == "training" || *subset == "validation") {
          o.subset = *subset == "training" ? ImageDirectoryOptions::Subset::kTraining
                                           : ImageDirectoryOptions::Subset::kValidation;
          return Make(directory.value, o);
        }
        if (*subset != "both") {
          throw py::value_error("subset: 'training', 'validation', 'both' or None");
        }
        // One walk of the tree; "Found N files" once, then a "Using" line for each subset.
        auto both = train::data::ImageDatasetsFromDirectory(directory.value, o);
        if (!both.ok()) ThrowStatus(both.status());
        return py::make_tuple(DatasetWithAttributes(std::move(both->first)),
                              DatasetWithAttributes(std::move(both->second)));
      },
      py::arg("directory"), py::arg("labels") = "inferred", py::arg("label_mode") = "int",
      py::arg("class_names") = py::none(), py::arg("color_mode") = "rgb",
      py::arg("batch_size") = 32, py::arg("image_size") = std::pair<int64_t, int64_t>{256, 256},
      py::arg("shuffle") = true, py::arg("seed") = py::none(),
      py::arg("validation_split") = py::none(), py::arg("subset") = py::none(),
      py::arg("interpolation") = "bilinear", py::arg("follow_links") = false,
      py::arg("crop_to_aspect_ratio") = false, py::arg("verbose") = true,
      R"doc(
keras.utils.image_dataset_from_directory: a folder of class folders of JPEGs as
(float32 images [B, H, W, C] in [0, 255], labels) batches. The dataset carries
class_names and file_paths, as Keras'. subset='both' returns (training, validation).
)doc");
}

}  // namespace sluice::python
