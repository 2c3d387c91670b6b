#include "python/ops_binding.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "ops/cast.h"
#include "ops/crop.h"
#include "ops/decode_and_resize.h"
#include "ops/decode_jpeg.h"
#include "ops/flip.h"
#include "ops/normalization.h"
#include "ops/normalize.h"
#include "ops/random_brightness.h"
#include "ops/random_contrast.h"
#include "ops/random_flip.h"
#include "ops/random_resized_crop.h"
#include "ops/random_rotation.h"
#include "ops/random_translation.h"
#include "ops/random_zoom.h"
#include "ops/read_file.h"
#include "ops/rescaling.h"
#include "ops/resize.h"
#include "python/errors.h"
#include "python/tensor_binding.h"

namespace sluice::python {
namespace {

using TensorFn = std::function<absl::StatusOr<Tensor>(const Tensor&, const ElementContext&)>;

absl::Status NoSuchComponent(const std::string& op, int component, size_t size) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": no component ", component, " in an element of ", size, " components"));
}

// Whether `spec` is known and has component `component` (else a step's is unknown; its run
// says what is wrong).
bool HasComponent(const ElementSpec& spec, int component) {
  return spec.known() && component >= 0 &&
         static_cast<size_t>(component) < spec.components().size();
}

// What a step makes of its component's spec; nullopt: unknown.
using TensorSpecFn = std::function<std::optional<TensorSpec>(const TensorSpec&)>;

// The component's spec unchanged (flips, Keras' augmentations).
std::optional<TensorSpec> SameSpec(const TensorSpec& in) { return in; }

// An image [height, width, channels] of `dtype` (nullopt: the input's); a size of 0 is the
// input's (unknown where its rank is). An input of another known rank is an error at run time:
// unknown here.
TensorSpecFn ImageSpec(std::optional<DType> dtype, int64_t height, int64_t width,
                       int64_t channels) {
  return [=](const TensorSpec& in) -> std::optional<TensorSpec> {
    const bool rank_known = !in.shape.unknown_rank();
    if (rank_known && in.shape.rank() != 3) return std::nullopt;
    auto dim = [&](int64_t n, int i) {
      return n > 0 ? n : rank_known ? in.shape.dim(i) : PartialShape::kUnknownDim;
    };
    return TensorSpec{dtype.value_or(in.dtype),
                      PartialShape{dim(height, 0), dim(width, 1), dim(channels, 2)}};
  };
}

// What a decode of a bytes scalar (a JPEG) makes: uint8 [height, width, channels], 0 unknown.
TensorSpecFn DecodedSpec(int64_t height, int64_t width, int64_t channels) {
  TensorSpecFn image = ImageSpec(DType::kUint8, height, width, channels);
  return [image](const TensorSpec& in) -> std::optional<TensorSpec> {
    if (in.dtype != DType::kBytes) return std::nullopt;
    return image({DType::kUint8, PartialShape::UnknownRank()});
  };
}

// The same shape as float32 (Rescaling, Normalization).
std::optional<TensorSpec> Float32Spec(const TensorSpec& in) {
  return TensorSpec{DType::kFloat32, in.shape};
}

// A step that replaces component `component` by f(component), whose spec is spec(component's).
std::shared_ptr<OpStep> Step(std::string description, int component, TensorFn f,
                             TensorSpecFn spec) {
  if (component != 0) absl::StrAppend(&description, "[component ", component, "]");
  auto step = std::make_shared<OpStep>();
  step->description = description;
  step->component = component;
  step->fn = [component, f = std::move(f), description](
                 Element e, const ElementContext& c) -> absl::StatusOr<Element> {
    if (component < 0 || static_cast<size_t>(component) >= e.size()) {
      return NoSuchComponent(description, component, e.size());
    }
    SLUICE_ASSIGN_OR_RETURN(e[static_cast<size_t>(component)],
                            f(e[static_cast<size_t>(component)], c));
    return e;
  };
  step->spec = [component, spec = std::move(spec)](const ElementSpec& in) -> ElementSpec {
    if (!HasComponent(in, component)) return {};
    std::vector<TensorSpec> out = in.components();
    std::optional<TensorSpec> c = spec(out[static_cast<size_t>(component)]);
    if (!c) return {};
    out[static_cast<size_t>(component)] = *std::move(c);
    return ElementSpec(std::move(out));
  };
  return step;
}

py::object OpOf(std::shared_ptr<OpStep> step) { return py::cast(PyOp{{std::move(step)}}); }

// The bytes of a scalar bytes component (an encoded JPEG, a serialized Example, a path).
absl::StatusOr<std::reference_wrapper<const std::string>> BytesScalar(const Tensor& t,
                                                                      const std::string& op) {
  if (t.dtype() != DType::kBytes || t.num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": expected a bytes scalar, got ",
                                                   DTypeName(t.dtype()), t.shape().DebugString()));
  }
  return std::cref(t.scalar<std::string>());
}

// An image size given as N (square) or (height, width).
std::pair<int64_t, int64_t> SizeOf(const py::object& size) {
  if (py::isinstance<py::int_>(size)) {
    const int64_t n = size.cast<int64_t>();
    if (n < 1) throw py::value_error(absl::StrCat("image sizes must be >= 1, not ", n));
    return {n, n};
  }
  auto hw = size.cast<std::pair<int64_t, int64_t>>();
  if (hw.first < 1 || hw.second < 1) throw py::value_error("image sizes must be >= 1");
  return hw;
}

// A JPEG decode's channel count, checked where the op is made: 0 (as encoded), 1 or 3.
void CheckChannels(int channels, absl::string_view op) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw py::value_error(
        absl::StrCat(op, ": channels must be 0 (as encoded), 1 or 3, not ", channels));
  }
}

std::string SizeText(std::pair<int64_t, int64_t> size) {
  return absl::StrCat("(", size.first, ", ", size.second, ")");
}

// Keras' factor: f means [-f, f] (or, for `same_sign`, [f, f]); (lower, upper) as given.
FactorRange FactorOf(const py::object& factor, bool same_sign = false) {
  if (py::isinstance<py::float_>(factor) || py::isinstance<py::int_>(factor)) {
    const double f = factor.cast<double>();
    return same_sign ? FactorRange{f, f} : FactorRange::Symmetric(f);
  }
  auto range = factor.cast<std::pair<double, double>>();
  return {range.first, range.second};
}

ResizeMethod ResizeMethodOf(const std::string& name) {
  if (name == "bilinear") return ResizeMethod::kBilinear;
  if (name == "area") return ResizeMethod::kArea;
  throw py::value_error(
      absl::StrCat("interpolation '", name, "': sluice has 'bilinear' and 'area'"));
}

ImageTransformOptions TransformOptionsOf(const std::string& fill_mode,
                                         const std::string& interpolation, float fill_value) {
  ImageTransformOptions options;
  if (fill_mode == "reflect") {
    options.fill_mode = FillMode::kReflect;
  } else if (fill_mode == "wrap") {
    options.fill_mode = FillMode::kWrap;
  } else if (fill_mode == "constant") {
    options.fill_mode = FillMode::kConstant;
  } else if (fill_mode == "nearest") {
    options.fill_mode = FillMode::kNearest;
  } else {
    throw py::value_error(absl::StrCat("fill_mode '", fill_mode,
                                       "': one of 'reflect', 'wrap', 'constant', 'nearest'"));
  }
  if (interpolation == "bilinear") {
    options.interpolation = Interpolation::kBilinear;
  } else if (interpolation == "nearest") {
    options.interpolation = Interpolation::kNearest;
  } else {
    throw py::value_error(
        absl::StrCat("interpolation '", interpolation, "': 'bilinear' or 'nearest'"));
  }
  options.fill_value = fill_value;
  return options;
}

// A StatusOr from a factory, or the exception it maps to.
template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) ThrowStatus(value.status());
  return *std::move(value);
}

std::vector<float> FloatsOf(const py::object& values) {
  if (py::isinstance<py::float_>(values) || py::isinstance<py::int_>(values)) {
    return {values.cast<float>()};
  }
  return values.cast<std::vector<float>>();
}

// The crop step, with the flip and normalize steps right after it on the same component, as one
// DecodeAndRandomResizedCrop call; into `rows` (a batch's rows) when set.
MapFn FusedCrop(const OpStep& crop, bool flip, const OpStep* normalize,
                std::shared_ptr<BatchRows> rows) {
  std::shared_ptr<const NormalizeTable> table;
  if (normalize != nullptr) {
    absl::StatusOr<NormalizeTable> t =
        NormalizeTable::Create(crop.crop.channels, normalize->mean, normalize->stddev);
    if (!t.ok()) ThrowStatus(t.status());
    table = std::make_shared<const NormalizeTable>(*std::move(t));
  }
  const int c = crop.component;
  const std::string name = crop.description;
  return [c, name, flip, table, rows, h = crop.out_h, w = crop.out_w, options = crop.crop](
             Element e, const ElementContext& context) -> absl::StatusOr<Element> {
    if (static_cast<size_t>(c) >= e.size()) return NoSuchComponent(name, c, e.size());
    SLUICE_ASSIGN_OR_RETURN(const std::string& jpeg, BytesScalar(e[static_cast<size_t>(c)], name));
    ResizeOutput output{.flip_left_right = flip && RandomFlipDecision(context.seed),
                        .normalize = table.get()};
    Tensor row;
    if (rows != nullptr) {
      SLUICE_ASSIGN_OR_RETURN(row, rows->Row(context.index));
      output.destination = &row;
      output.streaming_stores = true;  // nobody reads the batch before it is whole
    }
    SLUICE_ASSIGN_OR_RETURN(e[static_cast<size_t>(c)],
                            DecodeAndRandomResizedCrop(jpeg, h, w, context.seed, options, output));
    return e;
  };
}

// kFixedLen / kVarLen features as tf.io names them.
void RegisterFeatures(py::module_& io) {
  py::class_<FixedLenFeature>(io, "FixedLenFeature",
                              "tf.io.FixedLenFeature: a feature with a known number of values.")
      .def(py::init([](const std::vector<int64_t>& shape, py::handle dtype,
                       const py::object& default_value) {
             FixedLenFeature f{DTypeFromPython(dtype), Shape(shape)};
             if (!default_value.is_none()) f.default_value = TensorFromPython(default_value);
             return f;
           }),
           py::arg("shape"), py::arg("dtype"), py::arg("default_value") = py::none())
      .def("__repr__", [](const FixedLenFeature& f) {
        return absl::StrCat("FixedLenFeature(", f.shape.DebugString(), ", ", DTypeName(f.dtype),
                            f.default_value ? ", default_value=..." : "", ")");
      });
  py::class_<VarLenFeature>(io, "VarLenFeature",
                            "tf.io.VarLenFeature: any number of values, as a 1-D tensor.")
      .def(py::init([](py::handle dtype) { return VarLenFeature{DTypeFromPython(dtype)}; }),
           py::arg("dtype"))
      .def("__repr__", [](const VarLenFeature& f) {
        return absl::StrCat("VarLenFeature(", DTypeName(f.dtype), ")");
      });
}

py::object ParseExampleOp(const py::dict& features, int component) {
  FeatureSpec spec;
  std::vector<std::string> names;
  for (auto [name, config] : features) {
    const std::string n = name.cast<std::string>();
    names.push_back(n);
    if (py::isinstance<FixedLenFeature>(config)) {
      spec.features.emplace_back(n, config.cast<FixedLenFeature>());
    } else if (py::isinstance<VarLenFeature>(config)) {
      spec.features.emplace_back(n, config.cast<VarLenFeature>());
    } else {
      throw py::type_error(
          absl::StrCat("feature '", n, "': a sluice.io.FixedLenFeature or VarLenFeature"));
    }
  }
  ExampleParser parser = ValueOrThrow(ExampleParser::Create(std::move(spec)));
  std::string description = absl::StrCat("parse_example(", absl::StrJoin(names, ", "), ")");
  if (component != 0) absl::StrAppend(&description, "[component ", component, "]");
  auto step = std::make_shared<OpStep>();
  step->description = description;
  step->component = component;
  // The serialized Example's place takes the features, in the dict's order.
  step->fn = [parser, component, description](Element e,
                                              const ElementContext&) -> absl::StatusOr<Element> {
    if (component < 0 || static_cast<size_t>(component) >= e.size()) {
      return NoSuchComponent(description, component, e.size());
    }
    const size_t c = static_cast<size_t>(component);
    SLUICE_ASSIGN_OR_RETURN(const std::string& record, BytesScalar(e[c], description));
    SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> parsed, parser.Parse(record));
    Element out(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(c));
    for (Tensor& t : parsed) out.push_back(std::move(t));
    out.insert(out.end(), e.begin() + static_cast<std::ptrdiff_t>(c) + 1, e.end());
    return out;
  };
  std::vector<TensorSpec> parsed;  // a VarLenFeature: 1-D of any length
  for (const auto& [n, config] : parser.spec().features) {
    if (const auto* fixed = std::get_if<FixedLenFeature>(&config)) {
      parsed.push_back({fixed->dtype, PartialShape(fixed->shape)});
    } else {
      parsed.push_back({std::get<VarLenFeature>(config).dtype, PartialShape::UnknownDims(1)});
    }
  }
  step->spec = [component, parsed](const ElementSpec& in) -> ElementSpec {
    if (!HasComponent(in, component)) return {};
    const auto at = in.components().begin() + component;
    std::vector<TensorSpec> out(in.components().begin(), at);
    out.insert(out.end(), parsed.begin(), parsed.end());
    out.insert(out.end(), at + 1, in.components().end());
    return ElementSpec(std::move(out));
  };
  return OpOf(std::move(step));
}

void RegisterImageOps(py::module_& ops) {
  ops.def(
      "decode_jpeg",
      [](int channels, const std::string& dct_method, int component) {
        if (dct_method != "" && dct_method != "INTEGER_FAST" && dct_method != "INTEGER_ACCURATE") {
          throw py::value_error("dct_method: '', 'INTEGER_FAST' or 'INTEGER_ACCURATE'");
        }
        CheckChannels(channels, "decode_jpeg");
        const DecodeJpegOptions options{.channels = channels,
                                        .fast_dct = dct_method == "INTEGER_FAST"};
        return OpOf(Step(
            absl::StrCat("decode_jpeg(channels=", channels, ")"), component,
            [options, channels](const Tensor& t, const ElementContext&) -> absl::StatusOr<Tensor> {
              SLUICE_ASSIGN_OR_RETURN(const std::string& jpeg, BytesScalar(t, "decode_jpeg"));
              return DecodeJpeg(jpeg, options);
            },
            DecodedSpec(0, 0, channels)));
      },
      py::arg("channels") = 0, py::arg("dct_method") = "", py::arg("component") = 0,
      "tf.io.decode_jpeg: uint8 [height, width, channels]; channels 0 keeps the JPEG's.");

  ops.def(
      "decode_and_random_resized_crop",
      [](const py::object& size, std::pair<double, double> scale, std::pair<double, double> ratio,
         int channels, bool dct_scaling, const std::string& interpolation, int component) {
        const auto hw = SizeOf(size);
        CheckChannels(channels, "decode_and_random_resized_crop");
        RandomResizedCropOptions options{.min_area = scale.first,
                                         .max_area = scale.second,
                                         .min_aspect_ratio = ratio.first,
                                         .max_aspect_ratio = ratio.second,
                                         .channels = channels,
                                         .dct_scaling = dct_scaling,
                                         .method = ResizeMethodOf(interpolation)};
        if (absl::Status bad = CheckRandomResizedCropOptions("decode_and_random_resized_crop",
                                                             hw.first, hw.second, options);
            !bad.ok()) {
          ThrowStatus(bad);
        }
        auto step = Step(
            absl::StrCat("decode_and_random_resized_crop(", SizeText(hw), ")"), component,
            [hw, options](const Tensor& t, const ElementContext& c) -> absl::StatusOr<Tensor> {
              SLUICE_ASSIGN_OR_RETURN(const std::string& jpeg,
                                      BytesScalar(t, "decode_and_random_resized_crop"));
              return DecodeAndRandomResizedCrop(jpeg, hw.first, hw.second, c.seed, options);
            },
            DecodedSpec(hw.first, hw.second, channels));
        step->fusable = OpStep::Fusable::kCrop;
        step->out_h = hw.first;
        step->out_w = hw.second;
        step->crop = options;
        return OpOf(std::move(step));
      },
      py::arg("size"), py::arg("scale") = std::pair<double, double>{0.08, 1.0},
      py::arg("ratio") = std::pair<double, double>{3.0 / 4.0, 4.0 / 3.0}, py::arg("channels") = 3,
      py::arg("dct_scaling") = true, py::arg("interpolation") = "bilinear",
      py::arg("component") = 0,
      "torchvision's RandomResizedCrop(size, scale, ratio) of a JPEG, decoding only the window "
      "(at a DCT scale when dct_scaling): uint8 [h, w, channels], seeded per element.");

  ops.def(
      "random_resized_crop",
      [](const py::object& size, std::pair<double, double> scale, std::pair<double, double> ratio,
         const std::string& interpolation, int component) {
        const auto hw = SizeOf(size);
        RandomResizedCropOptions options{.min_area = scale.first,
                                         .max_area = scale.second,
                                         .min_aspect_ratio = ratio.first,
                                         .max_aspect_ratio = ratio.second,
                                         .method = ResizeMethodOf(interpolation)};
        if (absl::Status bad =
                CheckRandomResizedCropOptions("random_resized_crop", hw.first, hw.second, options);
            !bad.ok()) {
          ThrowStatus(bad);
        }
        return OpOf(Step(
            absl::StrCat("random_resized_crop(", SizeText(hw), ")"), component,
            [hw, options](const Tensor& t, const ElementContext& c) {
              return RandomResizedCrop(t, hw.first, hw.second, c.seed, options);
            },
            ImageSpec(std::nullopt, hw.first, hw.second, 0)));
      },
      py::arg("size"), py::arg("scale") = std::pair<double, double>{0.08, 1.0},
      py::arg("ratio") = std::pair<double, double>{3.0 / 4.0, 4.0 / 3.0},
      py::arg("interpolation") = "bilinear", py::arg("component") = 0,
      "torchvision's RandomResizedCrop of a decoded [h, w, c] uint8 or float32 image.");

  ops.def(
      "decode_and_resize",
      [](const py::object& size, int channels, bool crop_to_aspect_ratio, bool dct_scaling,
         const std::string& interpolation, int component) {
        const auto hw = SizeOf(size);
        CheckChannels(channels, "decode_and_resize");
        const DecodeAndResizeOptions options{.channels = channels,
                                             .crop_to_aspect_ratio = crop_to_aspect_ratio,
                                             .dct_scaling = dct_scaling,
                                             .method = ResizeMethodOf(interpolation)};
        return OpOf(Step(
            absl::StrCat("decode_and_resize(", SizeText(hw), ")"), component,
            [hw, options](const Tensor& t, const ElementContext&) -> absl::StatusOr<Tensor> {
              SLUICE_ASSIGN_OR_RETURN(const std::string& jpeg, BytesScalar(t, "decode_and_resize"));
              return DecodeAndResize(jpeg, hw.first, hw.second, options);
            },
            DecodedSpec(hw.first, hw.second, channels)));
      },
      py::arg("size"), py::arg("channels") = 3, py::arg("crop_to_aspect_ratio") = false,
      py::arg("dct_scaling") = true, py::arg("interpolation") = "bilinear",
      py::arg("component") = 0,
      "Decode a JPEG and resize it to uint8 [h, w, channels] (what image_dataset_from_directory "
      "does to each file).");

  ops.def(
      "resize",
      [](const py::object& size, const std::string& method, int component) {
        const auto hw = SizeOf(size);
        const ResizeMethod m = ResizeMethodOf(method);
        return OpOf(Step(
            absl::StrCat("resize(", SizeText(hw), ")"), component,
            [hw, m](const Tensor& t, const ElementContext&) {
              return Resize(t, hw.first, hw.second, m);
            },
            ImageSpec(DType::kFloat32, hw.first, hw.second, 0)));
      },
      py::arg("size"), py::arg("method") = "bilinear", py::arg("component") = 0,
      "tf.image.resize: float32 [h, w, c], unrounded.");

  ops.def(
      "center_crop",
      [](const py::object& size, int component) {
        const auto hw = SizeOf(size);
        return OpOf(Step(
            absl::StrCat("center_crop(", SizeText(hw), ")"), component,
            [hw](const Tensor& t, const ElementContext&) {
              return CenterCrop(t, hw.first, hw.second);
            },
            ImageSpec(std::nullopt, hw.first, hw.second, 0)));
      },
      py::arg("size"), py::arg("component") = 0,
      "The central window of an image, its corner rounded down (tf.image's).");

  ops.def(
      "flip_left_right",
      [](int component) {
        return OpOf(Step(
            "flip_left_right()", component,
            [](const Tensor& t, const ElementContext&) { return FlipLeftRight(t); }, SameSpec));
      },
      py::arg("component") = 0, "tf.image.flip_left_right of an [h, w, c] image.");

  ops.def(
      "random_flip_left_right",
      [](int component) {
        auto step = Step(
            "random_flip_left_right()", component,
            [](const Tensor& t, const ElementContext& c) { return RandomFlipLeftRight(t, c.seed); },
            SameSpec);
        step->fusable = OpStep::Fusable::kFlip;
        return OpOf(std::move(step));
      },
      py::arg("component") = 0,
      "tf.image.random_flip_left_right, seeded per element (the pipeline's seed).");

  ops.def(
      "normalize",
      [](const py::object& mean, const py::object& std, py::handle dtype, bool channels_first,
         int component) {
        std::vector<float> m = FloatsOf(mean), s = FloatsOf(std);
        const NormalizeOptions options{.dtype = DTypeFromPython(dtype),
                                       .channels_first = channels_first};
        // Here, not at every element.
        if (absl::Status bad = CheckNormalizeArguments(m, s, options); !bad.ok()) {
          ThrowStatus(bad);
        }
        auto step = Step(
            absl::StrCat("normalize(", DTypeName(options.dtype),
                         channels_first ? ", channels_first" : "", ")"),
            component,
            [m, s, options](const Tensor& t, const ElementContext&) {
              return Normalize(t, m, s, options);
            },
            [options](const TensorSpec& in) -> std::optional<TensorSpec> {
              std::optional<TensorSpec> hwc = ImageSpec(options.dtype, 0, 0, 0)(in);
              if (!hwc || !options.channels_first) return hwc;
              const PartialShape& d = hwc->shape;
              return TensorSpec{options.dtype, PartialShape{d.dim(2), d.dim(0), d.dim(1)}};
            });
        if (options.dtype == DType::kFloat32 && !channels_first) {
          step->fusable = OpStep::Fusable::kNormalize;
          step->mean = m;
          step->stddev = s;
        }
        return OpOf(std::move(step));
      },
      py::arg("mean"), py::arg("std"), py::arg("dtype") = "float32",
      py::arg("channels_first") = false, py::arg("component") = 0,
      "torchvision's ToTensor + Normalize(mean, std) of a uint8 image: (x / 255 - mean) / std, "
      "bitwise; channels_first writes [c, h, w].");

  ops.def(
      "cast",
      [](py::handle dtype, int component) {
        const DType d = DTypeFromPython(dtype);
        return OpOf(Step(
            absl::StrCat("cast(", DTypeName(d), ")"), component,
            [d](const Tensor& t, const ElementContext&) { return Cast(t, d); },
            [d](const TensorSpec& in) -> std::optional<TensorSpec> {
              return TensorSpec{d, in.shape};
            }));
      },
      py::arg("dtype"), py::arg("component") = 0,
      "tf.cast between numeric dtypes, saturating to integer ranges.");

  ops.def(
      "read_file",
      [](int component) {
        return OpOf(Step(
            "read_file()", component,
            [](const Tensor& t, const ElementContext&) -> absl::StatusOr<Tensor> {
              SLUICE_ASSIGN_OR_RETURN(const std::string& path, BytesScalar(t, "read_file"));
              return ReadFile(path);
            },
            [](const TensorSpec& in) -> std::optional<TensorSpec> {
              if (in.dtype != DType::kBytes) return std::nullopt;
              return TensorSpec{DType::kBytes, PartialShape::UnknownDims(0)};  // a scalar
            }));
      },
      py::arg("component") = 0, "tf.io.read_file: a path's contents as bytes.");
}

// Keras' preprocessing layers, on float32 [h, w, c] images or [b, h, w, c] batches.
void RegisterKerasOps(py::module_& ops) {
  ops.def(
      "random_flip",
      [](const std::string& mode, int component) {
        RandomFlip::Mode m;
        if (mode == "horizontal") {
          m = RandomFlip::Mode::kHorizontal;
        } else if (mode == "vertical") {
          m = RandomFlip::Mode::kVertical;
        } else if (mode == "horizontal_and_vertical") {
          m = RandomFlip::Mode::kHorizontalAndVertical;
        } else {
          throw py::value_error("mode: 'horizontal', 'vertical' or 'horizontal_and_vertical'");
        }
        RandomFlip flip(m);
        return OpOf(Step(
            absl::StrCat("random_flip(", mode, ")"), component,
            [flip](const Tensor& t, const ElementContext& c) { return flip.Apply(t, c.seed); },
            SameSpec));
      },
      py::arg("mode") = "horizontal_and_vertical", py::arg("component") = 0,
      "keras.layers.RandomFlip.");
  ops.def(
      "random_rotation",
      [](const py::object& factor, const std::string& fill_mode, const std::string& interpolation,
         float fill_value, int component) {
        RandomRotation op = ValueOrThrow(RandomRotation::Create(
            FactorOf(factor), TransformOptionsOf(fill_mode, interpolation, fill_value)));
        return OpOf(Step(
            "random_rotation()", component,
            [op](const Tensor& t, const ElementContext& c) { return op.Apply(t, c.seed); },
            SameSpec));
      },
      py::arg("factor"), py::arg("fill_mode") = "reflect", py::arg("interpolation") = "bilinear",
      py::arg("fill_value") = 0.0f, py::arg("component") = 0, "keras.layers.RandomRotation.");
  ops.def(
      "random_zoom",
      [](const py::object& height_factor, const py::object& width_factor,
         const std::string& fill_mode, const std::string& interpolation, float fill_value,
         int component) {
        std::optional<FactorRange> width;
        if (!width_factor.is_none()) width = FactorOf(width_factor);
        RandomZoom op = ValueOrThrow(
            RandomZoom::Create(FactorOf(height_factor), width,
                               TransformOptionsOf(fill_mode, interpolation, fill_value)));
        return OpOf(Step(
            "random_zoom()", component,
            [op](const Tensor& t, const ElementContext& c) { return op.Apply(t, c.seed); },
            SameSpec));
      },
      py::arg("height_factor"), py::arg("width_factor") = py::none(),
      py::arg("fill_mode") = "reflect", py::arg("interpolation") = "bilinear",
      py::arg("fill_value") = 0.0f, py::arg("component") = 0, "keras.layers.RandomZoom.");
  ops.def(
      "random_translation",
      [](const py::object& height_factor, const py::object& width_factor,
         const std::string& fill_mode, const std::string& interpolation, float fill_value,
         int component) {
        RandomTranslation op = ValueOrThrow(
            RandomTranslation::Create(FactorOf(height_factor), FactorOf(width_factor),
                                      TransformOptionsOf(fill_mode, interpolation, fill_value)));
        return OpOf(Step(
            "random_translation()", component,
            [op](const Tensor& t, const ElementContext& c) { return op.Apply(t, c.seed); },
            SameSpec));
      },
      py::arg("height_factor"), py::arg("width_factor"), py::arg("fill_mode") = "reflect",
      py::arg("interpolation") = "bilinear", py::arg("fill_value") = 0.0f, py::arg("component") = 0,
      "keras.layers.RandomTranslation.");
  ops.def(
      "random_contrast",
      [](const py::object& factor, std::pair<float, float> value_range, int component) {
        RandomContrast op =
            ValueOrThrow(RandomContrast::Create(FactorOf(factor, /*same_sign=*/true),
                                                ValueRange{value_range.first, value_range.second}));
        return OpOf(Step(
            "random_contrast()", component,
            [op](const Tensor& t, const ElementContext& c) { return op.Apply(t, c.seed); },
            SameSpec));
      },
      py::arg("factor"), py::arg("value_range") = std::pair<float, float>{0.0f, 255.0f},
      py::arg("component") = 0, "keras.layers.RandomContrast.");
  ops.def(
      "random_brightness",
      [](const py::object& factor, std::pair<float, float> value_range, int component) {
        RandomBrightness op = ValueOrThrow(RandomBrightness::Create(
            FactorOf(factor), ValueRange{value_range.first, value_range.second}));
        return OpOf(Step(
            "random_brightness()", component,
            [op](const Tensor& t, const ElementContext& c) { return op.Apply(t, c.seed); },
            SameSpec));
      },
      py::arg("factor"), py::arg("value_range") = std::pair<float, float>{0.0f, 255.0f},
      py::arg("component") = 0, "keras.layers.RandomBrightness.");
  ops.def(
      "rescaling",
      [](float scale, float offset, int component) {
        Rescaling op(scale, offset);
        return OpOf(Step(
            "rescaling()", component,
            [op](const Tensor& t, const ElementContext&) { return op.Apply(t); }, Float32Spec));
      },
      py::arg("scale"), py::arg("offset") = 0.0f, py::arg("component") = 0,
      "keras.layers.Rescaling: x * scale + offset, as float32.");
  ops.def(
      "normalization",
      [](const py::object& mean, const py::object& variance, bool invert, int component) {
        Normalization op =
            ValueOrThrow(Normalization::Create(FloatsOf(mean), FloatsOf(variance), invert));
        return OpOf(Step(
            "normalization()", component,
            [op](const Tensor& t, const ElementContext&) { return op.Apply(t); }, Float32Spec));
      },
      py::arg("mean"), py::arg("variance"), py::arg("invert") = false, py::arg("component") = 0,
      "keras.layers.Normalization with a known mean and variance, over the last axis.");
}

}  // namespace

ElementSpec OutputSpec(const PyOp& op, const ElementSpec& input) {
  ElementSpec spec = input;
  for (const auto& step : op.steps) {
    if (!spec.known() || !step->spec) return {};
    spec = step->spec(spec);
  }
  return spec;
}

std::string PyOp::Description() const {
  std::vector<std::string> names;
  for (const auto& step : steps) names.push_back(step->description);
  return absl::StrJoin(names, " -> ");
}

MapFn CompileOp(const PyOp& op, int64_t batch_size) {
  // A decode_and_random_resized_crop (of a known channel count) with the flip and normalize right
  // after it: one call, whatever follows.
  struct Fused {
    size_t crop = 0, end = 0;  // steps [crop, end)
    bool flip = false;
    const OpStep* normalize = nullptr;
  };
  const auto& steps = op.steps;
  auto fused_at = [&](size_t i) -> std::optional<Fused> {
    const OpStep& step = *steps[i];
    if (step.fusable != OpStep::Fusable::kCrop || step.crop.channels == 0) return std::nullopt;
    Fused f{i, i + 1};
    if (f.end < steps.size() && steps[f.end]->fusable == OpStep::Fusable::kFlip &&
        steps[f.end]->component == step.component) {
      f.flip = true;
      ++f.end;
    }
    if (f.end < steps.size() && steps[f.end]->fusable == OpStep::Fusable::kNormalize &&
        steps[f.end]->component == step.component) {
      f.normalize = steps[f.end].get();
      ++f.end;
    }
    return f;
  };
  std::vector<MapFn> fns;
  for (size_t i = 0; i < steps.size();) {
    std::optional<Fused> f = fused_at(i);
    if (!f) {
      fns.push_back(steps[i++]->fn);
      continue;
    }
    std::shared_ptr<BatchRows> rows;
    if (batch_size > 0 && f->end == steps.size()) {
      const OpStep& crop = *steps[f->crop];
      rows = std::make_shared<BatchRows>(batch_size,
                                         f->normalize != nullptr ? DType::kFloat32 : DType::kUint8,
                                         Shape{crop.out_h, crop.out_w, crop.crop.channels});
    }
    fns.push_back(FusedCrop(*steps[f->crop], f->flip, f->normalize, std::move(rows)));
    i = f->end;
  }
  if (fns.size() == 1) return fns[0];
  return [fns](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
    for (const MapFn& fn : fns) {
      SLUICE_ASSIGN_OR_RETURN(e, fn(std::move(e), c));
    }
    return e;
  };
}

void RegisterOps(py::module_& m) {
  py::module_ io = m.def_submodule("io", "tf.io's feature specs, for sluice.ops.parse_example.");
  RegisterFeatures(io);
  py::module_ ops = m.def_submodule(
      "ops",
      "Built-in element functions for Dataset.map: C++ code that runs without the GIL. Each "
      "works on one component of the element (component=0 by default) and leaves the others; "
      "compose(a, b, ...) or a list runs them in order, fusing a decode_and_random_resized_crop "
      "followed by random_flip_left_right and/or a float32 normalize into one pass.");
  py::class_<PyOp>(ops, "Op", "A built-in element function (or several, composed).")
      .def("__repr__", [](const PyOp& op) { return "sluice.ops.Op(" + op.Description() + ")"; })
      .def(py::pickle(
          [](const PyOp&) -> py::tuple {
            throw py::type_error("sluice.ops.Op cannot be pickled: it holds C++ functions");
          },
          [](const py::tuple&) -> PyOp { throw py::type_error("sluice.ops.Op"); }));
  ops.def(
      "compose",
      [](const py::args& args) {
        PyOp composed;
        for (py::handle op : args) {
          if (!py::isinstance<PyOp>(op)) {
            throw py::type_error(
                absl::StrCat("compose() takes sluice.ops ops, not ",
                             std::string(py::str(op.get_type().attr("__name__")))));
          }
          const PyOp& p = op.cast<const PyOp&>();
          composed.steps.insert(composed.steps.end(), p.steps.begin(), p.steps.end());
        }
        if (composed.steps.empty()) throw py::value_error("compose() of no ops");
        return composed;
      },
      "The ops applied one after the other.");
  ops.def("parse_example", &ParseExampleOp, py::arg("features"), py::arg("component") = 0,
          "tf.io.parse_single_example of a serialized tf.train.Example: its place in the element "
          "takes one component per feature, in the dict's order.");
  RegisterImageOps(ops);
  RegisterKerasOps(ops);
}

}  // namespace sluice::python
