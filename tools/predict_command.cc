#include "tools/predict_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/json_writer.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "ops/decode_and_resize.h"
#include "ops/normalize.h"
#include "ops/read_file.h"
#include "ops/resize.h"
#include "tools/command_line.h"
#include "train/fit/saved_model.h"

namespace sluice::tools {
namespace {

// One image to classify: where it came from, and its JPEG bytes (or why there are none), or
// raw uint8 pixels of height x width (`sluice convert fashion-mnist --format raw`).
struct Input {
  std::string source;  // "photo.jpg" or "train.tfrecord:17"
  absl::StatusOr<std::string> bytes;
  bool raw = false;
  int64_t height = 0, width = 0;
};

// The model's input image: float32 [1, height, width, channels] in [0, 1].
absl::StatusOr<Tensor> Preprocess(const Input& input, int64_t height, int64_t width, int channels,
                                  const NormalizeTable& scale) {
  if (!input.bytes.ok()) return input.bytes.status();
  const std::string& bytes = *input.bytes;
  absl::StatusOr<Tensor> image;
  if (!input.raw) {
    image = DecodeAndResize(bytes, height, width, {.channels = channels}, {.normalize = &scale});
  } else {
    const int64_t pixels = input.height * input.width;
    if (input.height <= 0 || input.width <= 0 ||
        static_cast<int64_t>(bytes.size()) != pixels * channels) {
      return absl::InvalidArgumentError(
          absl::StrCat("raw image of ", bytes.size(), " bytes is not ", input.height, "x",
                       input.width, "x", channels, " (the model's channels)"));
    }
    Tensor pixels_in(DType::kUint8, Shape{input.height, input.width, channels});
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(pixels_in.raw_data()));
    image = Resize(pixels_in,
                   ResizeRegion{.height = static_cast<double>(input.height),
                                .width = static_cast<double>(input.width)},
                   height, width, ResizeMethod::kBilinear, {.normalize = &scale});
  }
  if (!image.ok()) return image.status();
  return image->Reshape(Shape{1, height, width, channels});
}

struct Prediction {
  std::string source;
  absl::Status status;
  std::vector<std::pair<int64_t, float>> top;  // class, probability
};

// Whether `file` is a TFRecord file by its name, compressed ones (.tfrecord.gz) included.
bool IsTFRecordFile(absl::string_view file) {
  for (absl::string_view suffix : {".gz", ".zlib", ".zz"}) absl::ConsumeSuffix(&file, suffix);
  return absl::EndsWith(file, ".tfrecord") || absl::EndsWith(file, ".tfrecords");
}

// Each file's images: a JPEG, or every record of a TFRecord (by extension). A file that cannot
// be read, or a record that is corrupt, is an entry with its error (the records before it are
// predicted), so that --json says what failed.
absl::Status CollectInputs(const std::string& file, std::vector<Input>& out) {
  if (!IsTFRecordFile(file)) {
    absl::StatusOr<Tensor> bytes = ReadFile(file);
    if (!bytes.ok()) {
      out.push_back({.source = file, .bytes = bytes.status()});
    } else {
      out.push_back({.source = file, .bytes = std::move(*bytes->data<std::string>())});
    }
    return absl::OkStatus();
  }
  FeatureSpec spec;
  spec.features.push_back({"image/encoded", FixedLenFeature{DType::kBytes, {}}});
  spec.features.push_back(
      {"image/format", FixedLenFeature{DType::kBytes, {}, Tensor::Scalar<std::string>("jpeg")}});
  spec.features.push_back(
      {"image/height", FixedLenFeature{DType::kInt64, {}, Tensor::Scalar<int64_t>(0)}});
  spec.features.push_back(
      {"image/width", FixedLenFeature{DType::kInt64, {}, Tensor::Scalar<int64_t>(0)}});
  SLUICE_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(std::move(spec)));
  auto it = Dataset::TFRecord(file).MakeIterator();
  for (int64_t i = 0;; ++i) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    if (!next.ok()) {
      // A missing or corrupt file: the error names the file and the offset. The iterator's error
      // is sticky, so the rest of the file is not read.
      out.push_back({.source = i == 0 ? file : absl::StrCat(file, ":", i), .bytes = next.status()});
      return absl::OkStatus();
    }
    if (!next->has_value()) break;
    absl::StatusOr<Element> parsed = parser.Parse((**next)[0].scalar<std::string>());
    const std::string source = absl::StrCat(file, ":", i);
    if (!parsed.ok()) {
      out.push_back({.source = source, .bytes = parsed.status()});
    } else {
      out.push_back({.source = source,
                     .bytes = (*parsed)[0].scalar<std::string>(),
                     .raw = (*parsed)[1].scalar<std::string>() == "raw",
                     .height = (*parsed)[2].scalar<int64_t>(),
                     .width = (*parsed)[3].scalar<int64_t>()});
    }
  }
  return absl::OkStatus();
}

// Softmax of the logits, and the k most probable classes.
std::vector<std::pair<int64_t, float>> TopK(const float* logits, int64_t n, int64_t k) {
  const float max = *std::max_element(logits, logits + n);
  std::vector<double> p(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += p[i] = std::exp(static_cast<double>(logits[i] - max));
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  std::vector<std::pair<int64_t, float>> top;
  for (int64_t i = 0; i < std::min(k, n); ++i) {
    top.emplace_back(order[i], static_cast<float>(p[order[i]] / sum));
  }
  return top;
}

// The class's name as saved with the model, or its index.
std::string ClassName(const train::fit::LoadedModel& loaded, int64_t c) {
  return c < static_cast<int64_t>(loaded.class_names.size()) ? loaded.class_names[c]
                                                             : absl::StrCat(c);
}

void PrintPredictionsJson(const std::string& dir, const train::fit::LoadedModel& loaded,
                          const std::vector<Prediction>& predictions) {
  JsonWriter json;
  json.BeginObject();
  json.Key("model");
  json.String(dir);
  json.Key("predictions");
  json.BeginArray();
  for (const Prediction& p : predictions) {
    json.BeginObject();
    json.Key("source");
    json.String(p.source);
    if (!p.status.ok()) {
      json.Key("error");
      json.String(std::string(p.status.message()));
    } else {
      json.Key("top");
      json.BeginArray();
      for (const auto& [c, prob] : p.top) {
        json.BeginObject();
        json.Key("class");
        json.Int(c);
        json.Key("name");
        json.String(ClassName(loaded, c));
        json.Key("probability");
        json.Double(prob);
        json.EndObject();
      }
      json.EndArray();
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
}

void PrintPredictionsText(const train::fit::LoadedModel& loaded,
                          const std::vector<Prediction>& predictions) {
  for (const Prediction& p : predictions) {
    if (!p.status.ok()) {
      std::fprintf(stderr, "sluice predict: %s: %s\n", p.source.c_str(),
                   std::string(p.status.message()).c_str());
      continue;
    }
    std::string line = p.source + ":";
    for (const auto& [c, prob] : p.top) {
      absl::StrAppend(&line, " ", ClassName(loaded, c), " ", absl::StrFormat("%.3f", prob));
    }
    std::printf("%s\n", line.c_str());
  }
}

// The top `k` classes of each image of `files`; `failed` is set when a file or an image fails.
std::vector<Prediction> Predict(train::fit::LoadedModel& loaded,
                                const std::vector<std::string>& files, int64_t k, bool& failed) {
  const Shape& shape = loaded.input_shape;
  const int64_t height = shape.dim(1), width = shape.dim(2);
  const int channels = static_cast<int>(shape.dim(3));
  // The preprocessing `sluice train` trains with: resized, scaled to [0, 1].
  const NormalizeTable scale = NormalizeTable::Rescaling(channels, 1.0f / 255);
  std::vector<Input> inputs;
  for (const std::string& file : files) {
    absl::Status s = CollectInputs(file, inputs);
    if (!s.ok()) {
      std::fprintf(stderr, "sluice predict: %s\n", std::string(s.message()).c_str());
      failed = true;
    }
  }
  std::vector<Prediction> predictions;
  for (const Input& input : inputs) {
    Prediction p{.source = input.source};
    absl::StatusOr<Tensor> logits = Preprocess(input, height, width, channels, scale);
    if (logits.ok()) logits = loaded.model->Forward(*logits, /*training=*/false);
    if (!logits.ok()) {
      p.status = logits.status();
      failed = true;
    } else {
      p.top = TopK(logits->data<float>(), logits->num_elements(), k);
    }
    predictions.push_back(std::move(p));
  }
  return predictions;
}

int PredictFiles(const CommandLine& command_line) {
  const std::string& dir = command_line.Value("model");
  absl::StatusOr<int64_t> k = command_line.IntValue("top", 1);
  if (dir.empty()) return command_line.ReportUsageError("--model DIR is required");
  if (!k.ok()) return command_line.ReportUsageError(k.status().message());
  if (command_line.positional().empty()) {
    return command_line.ReportUsageError("give at least one JPEG or TFRecord file");
  }
  absl::StatusOr<train::fit::LoadedModel> loaded = train::fit::LoadModel(dir);
  if (!loaded.ok()) {
    std::fprintf(stderr, "sluice predict: %s\n", std::string(loaded.status().message()).c_str());
    return 1;
  }
  const Shape& shape = loaded->input_shape;
  if (shape.rank() != 4 || (shape.dim(3) != 1 && shape.dim(3) != 3)) {
    std::fprintf(stderr, "sluice predict: %s takes %s inputs, not images [N, H, W, 1 or 3]\n",
                 dir.c_str(), shape.DebugString().c_str());
    return 1;
  }
  bool failed = false;
  const std::vector<Prediction> predictions =
      Predict(*loaded, command_line.positional(), *k, failed);
  if (command_line.Flag("json")) {
    PrintPredictionsJson(dir, *loaded, predictions);
  } else {
    PrintPredictionsText(*loaded, predictions);
  }
  return failed ? 1 : 0;
}

}  // namespace

int RunPredict(int argc, char** argv) {
  CommandLine command_line(
      "sluice predict",
      "Loads a model saved by `sluice train --save DIR` (or train::fit::SaveModel) and prints\n"
      "the top-k classes of each image, with their names and probabilities (softmax of the\n"
      "model's outputs): JPEG files, or every record (image/encoded, JPEG or raw pixels) of\n"
      "files ending in .tfrecord. Each image is decoded, resized to the model's input size and "
      "scaled to\n"
      "[0, 1], as `sluice train` trains.");
  command_line.AddOption("model", "DIR", "", "the saved model's directory (required)");
  command_line.AddOption("top", "K", "5", "how many classes to print per image");
  command_line.AddFlag("json",
                       "print one JSON object: model, predictions [{source, top [{class, "
                       "name, probability}] or error}]");
  command_line.AddPositional("FILE", "JPEG or TFRecord files", /*repeated=*/true);
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;
  return PredictFiles(command_line);
}

}  // namespace sluice::tools
