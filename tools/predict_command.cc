#include "tools/predict_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/element.h"
#include "core/json_writer.h"
#include "core/tensor.h"
#include "io/compression.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "io/tfrecord_reader.h"
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

// "FILE:N", the source of a TFRecord file's record N, as {FILE, N}; nullopt for any other source
// (a JPEG file's path).
std::optional<std::pair<absl::string_view, absl::string_view>> RecordSource(
    absl::string_view source) {
  const size_t colon = source.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == source.size()) return std::nullopt;
  const absl::string_view index = source.substr(colon + 1);
  if (!std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::make_pair(source.substr(0, colon), index);
}

// "source: message", or the message alone where it names the source already (a file that
// cannot be read, a TFRecord record's error: "f.tfrecord: record 17 at offset ...").
std::string Described(const std::string& source, const absl::Status& status) {
  const absl::string_view message = status.message();
  bool named = absl::StartsWith(message, source + ": ");
  if (const auto record = RecordSource(source); !named && record) {
    named =
        absl::StartsWith(message, absl::StrCat(record->first, ": record ", record->second, " "));
  }
  return named ? std::string(message) : absl::StrCat(source, ": ", message);
}

// The model's input image: float32 [height, width, channels] in [0, 1].
absl::StatusOr<Tensor> Preprocess(const Input& input, int64_t height, int64_t width, int channels,
                                  const NormalizeTable& scale) {
  if (!input.bytes.ok()) return input.bytes.status();
  const std::string& bytes = *input.bytes;
  if (!input.raw) {
    return DecodeAndResize(bytes, height, width, {.channels = channels}, {.normalize = &scale});
  }
  if (input.height <= 0 || input.width <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a raw image (image/format raw) needs image/height and image/width, and this record's "
        "are ",
        input.height, " x ", input.width));
  }
  // The channels the record holds: the model's, or gray or RGB converted to them, as a JPEG's
  // are. (Each side at most the byte count: no product of untrusted sizes overflows.)
  const int64_t size = static_cast<int64_t>(bytes.size());
  int stored = 0;
  if (input.height <= size && input.width <= size) {
    const int64_t pixels = input.height * input.width;
    if (size == pixels * channels) {
      stored = channels;
    } else if (channels == 3 && size == pixels) {
      stored = 1;
    } else if (channels == 1 && size == pixels * 3) {
      stored = 3;
    }
  }
  if (stored == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("raw image of ", size, " bytes is not ", input.height, "x", input.width, "x",
                     channels, " (the model's channels)",
                     channels == 1 || channels == 3 ? " nor gray or RGB to convert" : ""));
  }
  Tensor pixels_in(DType::kUint8, Shape{input.height, input.width, channels});
  const auto* from = reinterpret_cast<const uint8_t*>(bytes.data());
  auto* to = static_cast<uint8_t*>(pixels_in.raw_data());
  const int64_t pixels = input.height * input.width;
  for (int64_t i = 0; i < pixels; ++i) {
    if (stored == channels) {
      std::copy(from + i * stored, from + (i + 1) * stored, to + i * channels);
    } else if (stored == 1) {
      std::fill(to + i * channels, to + (i + 1) * channels, from[i]);  // gray to RGB
    } else {
      // RGB to gray with libjpeg's weights, as a JPEG decoded to one channel is.
      const uint8_t* rgb = from + i * 3;
      to[i] = static_cast<uint8_t>((19595 * rgb[0] + 38470 * rgb[1] + 7471 * rgb[2] + 32768) >> 16);
    }
  }
  return Resize(pixels_in,
                ResizeRegion{.height = static_cast<double>(input.height),
                             .width = static_cast<double>(input.width)},
                height, width, ResizeMethod::kBilinear, {.normalize = &scale});
}

struct Prediction {
  std::string source;
  absl::Status status;
  std::vector<std::pair<int64_t, float>> top;  // class, probability
};

// Whether `file` is a TFRecord file by its name, compressed ones (.tfrecord.gz) included.
// Any case: "train.TFRecord" is one too.
bool IsTFRecordFile(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  absl::string_view file = lower;
  for (absl::string_view suffix : {".gz", ".zlib", ".zz"}) absl::ConsumeSuffix(&file, suffix);
  return absl::EndsWith(file, ".tfrecord") || absl::EndsWith(file, ".tfrecords") ||
         absl::EndsWith(file, ".tfrec");  // Kaggle's shards
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

// The class's name as saved with the model (a model saved without names, from C++ or
// `sluice import`, has none).
const std::string* ClassName(const train::fit::LoadedModel& loaded, int64_t c) {
  return c < static_cast<int64_t>(loaded.class_names.size()) ? &loaded.class_names[c] : nullptr;
}

struct PredictArgs {
  int64_t top = 5;
  int64_t batch = 32;
  bool skip_bad = false;
  bool json = false;
};

// Classifies images as they are read, `batch` at a time, and prints each result in input order
// as its batch finishes: memory stays at one batch, whatever the files hold. An input that fails
// is an entry with its error, or with skip_bad only a count.
class Predictor {
 public:
  Predictor(const std::string& dir, train::fit::LoadedModel& loaded, ExampleParser parser,
            const PredictArgs& args)
      : loaded_(loaded),
        args_(args),
        height_(loaded.input_shape.dim(1)),
        width_(loaded.input_shape.dim(2)),
        channels_(static_cast<int>(loaded.input_shape.dim(3))),
        // The preprocessing `sluice train` trains with: resized, scaled to [0, 1].
        scale_(NormalizeTable::Rescaling(channels_, 1.0f / 255)),
        parser_(std::move(parser)) {
    if (args_.json) {
      JsonWriter json;
      json.String(dir);
      std::printf("{\"model\": %s, \"predictions\": [", json.str().c_str());
    }
  }

  // Each file's images: a JPEG, or every record of a TFRecord (by extension).
  void AddFile(const std::string& file) {
    if (!IsTFRecordFile(file)) {
      absl::StatusOr<Tensor> bytes = ReadFile(file);
      if (!bytes.ok()) return Add({.source = file, .bytes = bytes.status()});
      return Add({.source = file, .bytes = std::move(*bytes->data<std::string>())});
    }
    absl::StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(
        file, {.compression = GuessCompression(file),
               .skip_corrupt = args_.skip_bad,
               .on_skipped = [this](const absl::Status& why) { Skipped("", why); }});
    if (!reader.ok()) return Add({.source = file, .bytes = reader.status()});
    std::string record;
    while (true) {
      const int64_t index = (*reader)->records_read();
      // Records skip_corrupt passes over go to on_skipped (without it the reader's error, which
      // names the file, record and offset, is sticky: nothing after it is read).
      absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
      if (!more.ok())
        return Add({.source = absl::StrCat(file, ":", index), .bytes = more.status()});
      if (!*more) {
        // Nothing to predict is worth saying: a wrong or unfinished file looks like this.
        if ((*reader)->records_read() == 0) {
          EndRepeats();
          std::fflush(stdout);
          std::fprintf(stderr, "sluice predict: %s: no records\n", file.c_str());
        }
        return;
      }
      const std::string source = absl::StrCat(file, ":", (*reader)->last_record().index);
      absl::StatusOr<Element> parsed = parser_.Parse(record);
      if (!parsed.ok()) {
        Add({.source = source, .bytes = parsed.status()});
      } else {
        Add({.source = source,
             .bytes = std::move(*(*parsed)[0].data<std::string>()),
             .raw = (*parsed)[1].scalar<std::string>() == "raw",
             .height = (*parsed)[2].scalar<int64_t>(),
             .width = (*parsed)[3].scalar<int64_t>()});
      }
    }
  }

  // Classifies what is pending, prints the rest, and closes the JSON object. Returns the exit
  // status: 1 when an input failed (without skip_bad).
  int Finish() {
    Flush();
    EndRepeats();
    if (args_.json) {
      std::printf("], \"images\": %lld, \"skipped\": %lld, \"failed\": %lld}\n",
                  static_cast<long long>(predicted_), static_cast<long long>(skipped_),
                  static_cast<long long>(failed_));
    } else if (skipped_ > 0) {
      std::fprintf(stderr, "sluice predict: %lld images, %lld bad inputs skipped\n",
                   static_cast<long long>(predicted_), static_cast<long long>(skipped_));
    }
    std::fflush(stdout);
    return failed_ > 0 ? 1 : 0;
  }

 private:
  // A bad input or corrupt record under --skip-bad: counted, and named on stderr.
  void Skipped(const std::string& source, const absl::Status& why) {
    ++skipped_;
    ErrorLine("skipped ", source, why);
  }

  // "sluice predict: [skipped ]SOURCE: ERROR" on stderr, after the predictions printed before it.
  // An error of a TFRecord record whose message repeats the one of the record before (every
  // record of a file of another schema lacks image/encoded) is counted, and the count said once
  // another line, or a good input, comes. Files are each named.
  void ErrorLine(absl::string_view verb, const std::string& source, const absl::Status& status) {
    // A file's records share its key; other sources are keys of their own.
    const auto record = RecordSource(source);
    const std::string key = absl::StrCat(record ? record->first : absl::string_view(source), "\n",
                                         verb, status.message());
    if (key == last_error_) {
      ++repeats_;
      last_repeat_source_ = source;
      return;
    }
    EndRepeats();
    last_error_ = key;
    std::fflush(stdout);
    std::fprintf(
        stderr, "sluice predict: %s%s\n", std::string(verb).c_str(),
        (source.empty() ? std::string(status.message()) : Described(source, status)).c_str());
  }

  // Says how many errors repeated the last one printed; a prediction or another error comes next.
  void EndRepeats() {
    if (repeats_ > 0) {
      std::fflush(stdout);
      std::fprintf(stderr, "sluice predict: ... and the same for %lld more inputs, up to %s\n",
                   static_cast<long long>(repeats_), last_repeat_source_.c_str());
    }
    repeats_ = 0;
    last_error_.clear();
  }

  void Add(const Input& input) {
    absl::StatusOr<Tensor> image = Preprocess(input, height_, width_, channels_, scale_);
    if (!image.ok()) {
      if (args_.skip_bad) return Skipped(input.source, image.status());
      pending_.push_back({.source = input.source, .status = image.status()});
    } else {
      if (args_.skip_bad) EndRepeats();  // skips print as they come: a good input ends a run
      pending_.push_back({.source = input.source});
      images_.push_back(*std::move(image));
    }
    if (static_cast<int64_t>(images_.size()) == args_.batch) Flush();
  }

  // One forward pass over the pending images, then their predictions (and the errors between
  // them) in input order.
  void Flush() {
    if (!images_.empty()) {
      const int64_t n = static_cast<int64_t>(images_.size());
      const int64_t image_floats = height_ * width_ * channels_;
      Tensor batch(DType::kFloat32, Shape{n, height_, width_, channels_});
      for (int64_t i = 0; i < n; ++i) {
        std::copy_n(images_[i].data<float>(), image_floats, batch.data<float>() + i * image_floats);
      }
      absl::StatusOr<Tensor> logits = loaded_.model->Forward(batch, /*training=*/false);
      const int64_t classes = logits.ok() ? logits->num_elements() / n : 0;
      int64_t i = 0;
      for (Prediction& p : pending_) {
        if (!p.status.ok()) continue;
        if (!logits.ok()) {
          p.status = logits.status();
        } else {
          p.top = TopK(logits->data<float>() + i * classes, classes, args_.top);
        }
        ++i;
      }
      images_.clear();
    }
    for (const Prediction& p : pending_) Print(p);
    pending_.clear();
  }

  void Print(const Prediction& p) {
    if (!p.status.ok()) {
      ++failed_;
    } else {
      ++predicted_;
    }
    if (args_.json) {
      JsonWriter json;
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
          if (const std::string* name = ClassName(loaded_, c)) {
            json.String(*name);
          } else {
            json.Null();
          }
          json.Key("probability");
          json.Double(prob);
          json.EndObject();
        }
        json.EndArray();
      }
      json.EndObject();
      std::printf("%s%s", printed_ > 0 ? ", " : "", json.str().c_str());
    } else if (!p.status.ok()) {
      ErrorLine("", p.source, p.status);
    } else {
      EndRepeats();
      std::string line = p.source + ":";
      for (const auto& [c, prob] : p.top) {
        // An unnamed class reads "class 3", never a bare index beside its probability.
        const std::string* name = ClassName(loaded_, c);
        absl::StrAppend(&line, " ", name != nullptr ? *name : absl::StrCat("class ", c), " ",
                        absl::StrFormat("%.3f", prob));
      }
      std::printf("%s\n", line.c_str());
    }
    ++printed_;
  }

  train::fit::LoadedModel& loaded_;
  const PredictArgs args_;
  const int64_t height_, width_;
  const int channels_;
  const NormalizeTable scale_;
  const ExampleParser parser_;
  std::vector<Prediction> pending_;  // this batch's inputs in order, failed ones included
  std::vector<Tensor> images_;       // the preprocessed images among them
  int64_t printed_ = 0, predicted_ = 0, skipped_ = 0, failed_ = 0;
  std::string last_error_;  // the last error line's key (its file, verb and message), until a
                            // prediction or another key ends the run
  int64_t repeats_ = 0;     // errors since with that key
  std::string last_repeat_source_;
};

int PredictFiles(const CommandLine& command_line) {
  const std::string& dir = command_line.Value("model");
  absl::StatusOr<int64_t> k = command_line.IntValue("top", 1);
  absl::StatusOr<int64_t> batch = command_line.IntValue("batch", 1);
  if (dir.empty()) return command_line.ReportUsageError("--model DIR is required");
  if (!k.ok()) return command_line.ReportUsageError(k.status().message());
  if (!batch.ok()) return command_line.ReportUsageError(batch.status().message());
  if (command_line.positional().empty()) {
    return command_line.ReportUsageError("give at least one JPEG or TFRecord file");
  }
  absl::StatusOr<train::fit::LoadedModel> loaded = train::fit::LoadModel(dir);
  const bool json = command_line.Flag("json");
  if (!loaded.ok()) return ReportFailure("sluice predict", loaded.status(), json);
  const Shape& shape = loaded->input_shape;
  if (shape.rank() != 4 || (shape.dim(3) != 1 && shape.dim(3) != 3)) {
    return ReportFailure(
        "sluice predict",
        absl::InvalidArgumentError(absl::StrCat(dir, " takes ", shape.DebugString(),
                                                " inputs, not images [N, H, W, 1 or 3]")),
        json);
  }
  // The features of `sluice convert`'s records.
  FeatureSpec spec;
  spec.features.push_back({"image/encoded", FixedLenFeature{DType::kBytes, {}}});
  spec.features.push_back(
      {"image/format", FixedLenFeature{DType::kBytes, {}, Tensor::Scalar<std::string>("jpeg")}});
  spec.features.push_back(
      {"image/height", FixedLenFeature{DType::kInt64, {}, Tensor::Scalar<int64_t>(0)}});
  spec.features.push_back(
      {"image/width", FixedLenFeature{DType::kInt64, {}, Tensor::Scalar<int64_t>(0)}});
  absl::StatusOr<ExampleParser> parser = ExampleParser::Create(std::move(spec));
  if (!parser.ok()) return ReportFailure("sluice predict", parser.status(), json);
  Predictor predictor(
      dir, *loaded, *std::move(parser),
      {.top = *k, .batch = *batch, .skip_bad = command_line.Flag("skip-bad"), .json = json});
  for (const std::string& file : command_line.positional()) predictor.AddFile(file);
  return predictor.Finish();
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
  command_line.AddOption("batch", "N", "32", "images classified per forward pass");
  command_line.AddFlag("skip-bad",
                       "skip unreadable files, bad images and corrupt TFRecord records (counted) "
                       "instead of failing; the records after a corrupt one are still read");
  command_line.AddFlag("json",
                       "print one JSON object: model, predictions [{source, top [{class, "
                       "name, probability}] or error}], images, skipped, failed");
  command_line.AddPositional("FILE", "JPEG or TFRecord files", /*repeated=*/true);
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;
  return PredictFiles(command_line);
}

}  // namespace sluice::tools
