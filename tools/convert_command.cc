#include "tools/convert_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/json_writer.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "io/atomic_file.h"
#include "io/example_builder.h"
#include "io/idx_file.h"
#include "io/tfrecord_writer.h"
#include "oneapi/tbb/parallel_for.h"
#include "ops/decode_jpeg.h"
#include "ops/encode_jpeg.h"
#include "ops/jpeg_restart.h"
#include "ops/read_file.h"
#include "tools/command_line.h"
#include "tools/option_table.h"
#include "train/data/image_dataset_from_directory.h"

namespace sluice::tools {
namespace {

namespace fs = std::filesystem;

// A shard's index has five digits in its name.
constexpr int kMaxShards = 99999;

constexpr const char* kFashionMnistClasses[] = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                "Bag",         "Ankle boot"};

void PrintError(absl::string_view command, absl::string_view message) {
  std::fflush(stdout);
  std::fprintf(stderr, "sluice convert %.*s: %.*s\n", static_cast<int>(command.size()),
               command.data(), static_cast<int>(message.size()), message.data());
}

// "\r"-rewritten progress on stderr, only when a person is watching.
class Progress {
 public:
  explicit Progress(std::string label) : label_(std::move(label)), enabled_(isatty(2) == 1) {}
  void Update(int64_t done, int64_t total) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::fprintf(stderr, "\r%s: %lld/%lld", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total));
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_{};
};

std::string ShardName(absl::string_view split, int index, int count) {
  return absl::StrFormat("%s-%05d-of-%05d.tfrecord", split, index, count);
}

// Writes `total` records into `num_shards` files (at most `total`, so that none is empty),
// contiguous blocks of nearly equal size (shard s holds records [s * total / N, (s + 1) * total /
// N)). The shards are staged under hidden names (".train-00000-of-00004.tfrecord.staged-PID",
// which readers' globs do not match) and renamed into place only by Commit: a failed run leaves
// an earlier conversion in the folder as it was, and removes what it staged.
class ShardedWriter {
 public:
  ShardedWriter(std::string dir, std::string split, int num_shards, int64_t total)
      : dir_(std::move(dir)),
        split_(std::move(split)),
        num_shards_(static_cast<int>(std::min<int64_t>(num_shards, std::max<int64_t>(total, 1)))),
        total_(total) {}
  ~ShardedWriter() {
    if (!committed_) {
      writer_.reset();  // Removes its temporary file.
      for (const std::string& path : finished_) std::remove(path.c_str());
    }
  }

  // `position` is the record's index in 0..total; it picks the shard.
  absl::Status Write(int64_t position, absl::string_view record) {
    const int shard = static_cast<int>(position * num_shards_ / std::max<int64_t>(total_, 1));
    while (next_shard_ <= shard) SLUICE_RETURN_IF_ERROR(OpenNext());
    SLUICE_RETURN_IF_ERROR(writer_->Write(record));
    bytes_ += record.size();
    ++records_;
    return absl::OkStatus();
  }

  // Closes the last shard and creates any remaining (empty) ones.
  absl::Status Finish() {
    while (next_shard_ < num_shards_) SLUICE_RETURN_IF_ERROR(OpenNext());
    return CloseCurrent();
  }

  // Renames the finished set into place (once everything else the conversion writes is written
  // too) and removes the same split's shards of another count that an earlier conversion left
  // (readers glob "<split>-*", and would read both sets), and what a killed conversion staged.
  // A rename that fails part-way (rare: one folder, one file system) leaves the shards renamed so
  // far beside the earlier ones: the error says which.
  absl::Status Commit() {
    for (const std::string& staged : finished_) {
      const fs::path path(staged);
      std::string name = path.filename().string().substr(1);  // the leading "."
      name.resize(name.rfind(kStagedSuffix));
      std::error_code error;
      fs::rename(path, path.parent_path() / name, error);
      if (error) {
        return absl::InternalError(absl::StrCat("cannot rename ", staged, " to ", name, " in ",
                                                dir_, ": ", error.message()));
      }
    }
    committed_ = true;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_, error)) {
      const std::string name = entry.path().filename().string();
      const std::optional<int> count = ShardCountOf(name);
      const bool stale_stage = absl::StartsWith(name, "." + split_ + "-") && StagedByTheDead(name);
      if (!stale_stage && (!count || *count == num_shards_)) continue;
      std::error_code removed;
      fs::remove(entry.path(), removed);
      if (removed) {
        std::fprintf(stderr,
                     "sluice convert: warning: cannot remove %s, a shard of an earlier "
                     "conversion: %s\n",
                     entry.path().c_str(), removed.message().c_str());
      }
    }
    return absl::OkStatus();
  }

  int64_t records() const { return records_; }
  int64_t bytes() const { return bytes_; }
  int num_shards() const { return num_shards_; }

 private:
  static constexpr char kStagedSuffix[] = ".staged-";

  // Whether `name` was staged by a process that is gone (a killed conversion): one still running
  // into the same folder keeps its files.
  static bool StagedByTheDead(absl::string_view name) {
    const size_t at = name.rfind(kStagedSuffix);
    int pid = 0;
    if (at == absl::string_view::npos ||
        !absl::SimpleAtoi(name.substr(at + std::strlen(kStagedSuffix)), &pid) || pid <= 0) {
      return false;
    }
    return kill(pid, 0) != 0 && errno == ESRCH;
  }

  // N when `name` is a shard of this split as ShardName names them ("<split>-00001-of-N").
  std::optional<int> ShardCountOf(absl::string_view name) const {
    if (!absl::ConsumePrefix(&name, split_) || !absl::ConsumePrefix(&name, "-") ||
        !absl::ConsumeSuffix(&name, ".tfrecord") || name.size() != 14 ||
        name.substr(5, 4) != "-of-") {
      return std::nullopt;
    }
    int index = 0, count = 0;
    if (!absl::SimpleAtoi(name.substr(0, 5), &index) || !absl::SimpleAtoi(name.substr(9), &count)) {
      return std::nullopt;
    }
    return count;
  }

  absl::Status CloseCurrent() {
    if (writer_ == nullptr) return absl::OkStatus();
    SLUICE_RETURN_IF_ERROR(writer_->Close());
    finished_.push_back(writer_->path());
    writer_.reset();
    return absl::OkStatus();
  }
  absl::Status OpenNext() {
    SLUICE_RETURN_IF_ERROR(CloseCurrent());
    const std::string path =
        (fs::path(dir_) /
         absl::StrCat(".", ShardName(split_, next_shard_, num_shards_), kStagedSuffix, getpid()))
            .string();
    // No fsync per shard: a converter's output is regenerated, not precious, and
    // the rename still guarantees that no half-written shard is visible.
    SLUICE_ASSIGN_OR_RETURN(writer_, TFRecordWriter::Open(path, {.sync = false}));
    ++next_shard_;
    return absl::OkStatus();
  }

  std::string dir_;
  std::string split_;
  int num_shards_;
  int64_t total_;
  int next_shard_ = 0;
  std::unique_ptr<TFRecordWriter> writer_;
  std::vector<std::string> finished_;
  int64_t records_ = 0;
  int64_t bytes_ = 0;
  bool committed_ = false;
};

absl::Status WriteLabels(const std::string& dir, const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) absl::StrAppend(&text, name, "\n");
  return WriteFileAtomically((fs::path(dir) / "labels.txt").string(), text);
}

// Creates `dir` when it is missing; `created` says whether it did.
absl::Status MakeDirectory(const std::string& dir, bool& created) {
  std::error_code error;
  created = fs::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat(dir, ": cannot create: ", error.message()));
  return absl::OkStatus();
}

// Removes the output folder a failed conversion created, when nothing is in it: a failure leaves
// the folder as it found it. Cancelled once the conversion is whole.
auto RemoveIfLeftEmpty(const std::string& dir, const bool& created) {
  return absl::MakeCleanup([&dir, &created] {
    std::error_code ignored;  // not empty, or not ours: it stays
    if (created && fs::is_empty(dir, ignored)) fs::remove(dir, ignored);
  });
}

std::string ImageExample(std::string encoded, int64_t label, int64_t height, int64_t width,
                         absl::string_view format) {
  ExampleBuilder builder;
  builder.AddBytes("image/encoded", {std::move(encoded)})
      .AddInt64("image/class/label", {label})
      .AddInt64("image/height", {height})
      .AddInt64("image/width", {width})
      .AddBytes("image/format", {std::string(format)});
  return builder.Serialize();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Ends a --json summary whose last array is closed: its "seconds", on one line.
void PrintSummaryEnd(double seconds, JsonWriter& json) {
  json.Key("seconds");
  json.Double(seconds);
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
}

// ---------------------------------------------------------------- fashion-mnist

struct SplitResult {
  std::string name;
  int64_t examples = 0;
  int64_t bytes = 0;
  int shards = 0;
};

// One split's shards, finished but not committed: its writer joins `pending`.
absl::StatusOr<SplitResult> ConvertMnistSplit(
    const std::string& source, absl::string_view prefix, const std::string& split,
    const std::string& out, int shards, bool raw, int quality,
    std::vector<std::unique_ptr<ShardedWriter>>& pending) {
  const std::string images_path =
      (fs::path(source) / absl::StrCat(prefix, "-images-idx3-ubyte.gz")).string();
  const std::string labels_path =
      (fs::path(source) / absl::StrCat(prefix, "-labels-idx1-ubyte.gz")).string();
  SLUICE_ASSIGN_OR_RETURN(IdxFile images, ReadIdxFile(images_path));
  SLUICE_ASSIGN_OR_RETURN(IdxFile labels, ReadIdxFile(labels_path));
  if (images.type != IdxType::kUint8 || images.dims.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, ": expected uint8 images of rank 3 [count, height, width], got ",
        images.dims.size(), " dimensions of type code ", static_cast<int>(images.type)));
  }
  if (labels.type != IdxType::kUint8 || labels.dims.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_path, ": expected uint8 labels of rank 1 [count]"));
  }
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, " holds ", images.dims[0],
                                                   " images but ", labels_path, " holds ",
                                                   labels.dims[0], " labels"));
  }
  const int64_t count = images.dims[0], height = images.dims[1], width = images.dims[2];
  const int64_t pixels = height * width;
  auto writer = std::make_unique<ShardedWriter>(out, split, shards, count);
  Progress progress(absl::StrCat("convert ", split));
  Tensor image(DType::kUint8, Shape{height, width, 1});
  for (int64_t i = 0; i < count; ++i) {
    const int64_t label = static_cast<unsigned char>(labels.data[i]);
    if (label >= 10) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label ", i, " at offset ",
                                                     8 + i, " is ", label, ", expected 0..9"));
    }
    std::string pixels_of_i = images.data.substr(i * pixels, pixels);
    std::string encoded;
    if (raw) {
      encoded = std::move(pixels_of_i);
    } else {
      std::copy(pixels_of_i.begin(), pixels_of_i.end(), image.data<uint8_t>());
      SLUICE_ASSIGN_OR_RETURN(encoded, EncodeJpeg(image, {.quality = quality}));
    }
    SLUICE_RETURN_IF_ERROR(writer->Write(
        i, ImageExample(std::move(encoded), label, height, width, raw ? "raw" : "jpeg")));
    progress.Update(i + 1, count);
  }
  SLUICE_RETURN_IF_ERROR(writer->Finish());
  SplitResult result{split, writer->records(), writer->bytes(), writer->num_shards()};
  pending.push_back(std::move(writer));
  return result;
}

struct FashionMnistArgs {
  std::string out;
  int shards = 4;
  std::string format = "jpeg";
  int quality = 95;
  std::string source = "/usr/share/datasets/fashion-mnist";
  bool json = false;
};

// --out and --shards, which every source takes.
template <typename Args>
std::vector<OptionRow<Args>> OutputRows(std::string shards_help) {
  return {Option("out", "DIR", Field<Args>(&Args::out),
                 "output directory (created if missing); required", {.required = true}),
          Option("shards", "N", Field<Args>(&Args::shards), std::move(shards_help),
                 {.min = 1, .max = kMaxShards})};
}

template <typename Args>
std::vector<OptionRow<Args>> JsonRow() {
  return {Flag("json", Field<Args>(&Args::json), "print the summary as one JSON object")};
}

const OptionTable<FashionMnistArgs>& FashionMnistOptions() {
  using Args = FashionMnistArgs;
  static const auto* table = new OptionTable<Args>({
      OutputRows<Args>("shards per split"),
      {Option("format", "FORMAT", Field<Args>(&Args::format),
              "jpeg (grayscale JPEG) or raw (the 28x28 uint8 pixels)",
              {.parse = Choice({"jpeg", "raw"})}),
       Option("quality", "Q", Field<Args>(&Args::quality), "JPEG quality, 1..100",
              {.min = 1, .max = 100}),
       Option("source", "DIR", Field<Args>(&Args::source),
              "directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")},
      JsonRow<Args>(),
  });
  return *table;
}

void PrintFashionMnistSummary(const FashionMnistArgs& args, const std::vector<SplitResult>& results,
                              double seconds) {
  if (!args.json) {
    for (const SplitResult& r : results) {
      std::printf("%s: %lld examples in %d shards, %.1f MB of records\n", r.name.c_str(),
                  static_cast<long long>(r.examples), r.shards, r.bytes / 1e6);
    }
    std::printf("wrote %s (format %s, 10 classes in labels.txt) in %.2f s\n", args.out.c_str(),
                args.format.c_str(), seconds);
    return;
  }
  JsonWriter json;
  json.BeginObject();
  json.Key("out");
  json.String(args.out);
  json.Key("format");
  json.String(args.format);
  json.Key("shards");
  json.Int(args.shards);
  json.Key("classes");
  json.Int(10);
  json.Key("splits");
  json.BeginArray();
  for (const SplitResult& r : results) {
    json.BeginObject();
    json.Key("name");
    json.String(r.name);
    json.Key("examples");
    json.Int(r.examples);
    json.Key("bytes");
    json.Int(r.bytes);
    json.Key("shards");
    json.Int(r.shards);
    json.EndObject();
  }
  json.EndArray();
  PrintSummaryEnd(seconds, json);
}

// Both splits and the class names into args.out.
absl::StatusOr<std::vector<SplitResult>> ConvertFashionMnist(const FashionMnistArgs& args) {
  bool created = false;
  SLUICE_RETURN_IF_ERROR(MakeDirectory(args.out, created));
  auto failed = RemoveIfLeftEmpty(args.out, created);
  std::vector<SplitResult> results;
  // Both splits' shards stay uncommitted until everything is written: a failure in the test
  // split or the labels removes the train split's too.
  std::vector<std::unique_ptr<ShardedWriter>> pending;
  for (auto [prefix, split] : {std::pair{"train", "train"}, std::pair{"t10k", "test"}}) {
    SLUICE_ASSIGN_OR_RETURN(SplitResult result,
                            ConvertMnistSplit(args.source, prefix, split, args.out, args.shards,
                                              args.format == "raw", args.quality, pending));
    results.push_back(std::move(result));
  }
  std::vector<std::string> names(std::begin(kFashionMnistClasses), std::end(kFashionMnistClasses));
  SLUICE_RETURN_IF_ERROR(WriteLabels(args.out, names));
  for (const auto& writer : pending) SLUICE_RETURN_IF_ERROR(writer->Commit());
  std::move(failed).Cancel();
  return results;
}

int RunFashionMnist(int argc, char** argv) {
  CommandLine command_line(
      "sluice convert fashion-mnist",
      "Converts Fashion-MNIST's gzipped IDX files into TFRecord shards train-*-of-N.tfrecord\n"
      "and test-*-of-N.tfrecord (keys image/encoded, image/class/label, image/height,\n"
      "image/width, image/format) and writes labels.txt with the 10 class names.");
  FashionMnistArgs args;
  if (std::optional<int> exit =
          FashionMnistOptions().ParseOrReport(command_line, argc, argv, args)) {
    return *exit;
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<SplitResult>> results = ConvertFashionMnist(args);
  if (!results.ok()) {
    return ReportFailure("sluice convert fashion-mnist", results.status(), args.json);
  }
  PrintFashionMnistSummary(args, *results, SecondsSince(start));
  return kExitOk;
}

// ---------------------------------------------------------------- images

struct ImageFile {
  std::string path;
  int64_t label;
};

// The class folders and their image files, listed exactly as ImageDatasetFromDirectory lists
// them (Keras' index_directory: classes sorted, .jpg/.jpeg/.png/.bmp/.gif files), so that a
// converted tree and the folder itself give the same labels.
absl::Status ListImageTree(const std::string& root, std::vector<std::string>* classes,
                           std::vector<ImageFile>* files) {
  SLUICE_ASSIGN_OR_RETURN(train::data::ImageDirectoryIndex index,
                          train::data::IndexImageDirectory(root, {}));
  *classes = std::move(index.class_names);
  for (size_t i = 0; i < index.files.size(); ++i) {
    files->push_back({std::move(index.files[i]), index.labels[i]});
  }
  return absl::OkStatus();
}

// Fisher-Yates with mt19937_64 and an explicit reduction: std::shuffle's and the
// distributions' algorithms differ between standard libraries, this does not.
void DeterministicShuffle(std::vector<ImageFile>& files, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = files.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(files[i - 1], files[j]);
  }
}

struct ImagesArgs {
  std::string out;
  int shards = 4;
  uint64_t seed = 0;
  std::string split = "train";
  int restart_interval = 0;  // MCUs; 0: the bytes copied
  bool skip_bad = false;
  bool json = false;
};

absl::StatusOr<std::string> ShardPrefix(absl::string_view flag, const std::string& text) {
  if (text.empty() || text.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " takes a file name prefix without '/'"));
  }
  return text;
}

absl::StatusOr<int> RestartInterval(absl::string_view flag, const std::string& text) {
  int mcus;
  if (!absl::SimpleAtoi(text, &mcus) || mcus < 0 || mcus > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " takes 0..65535 MCUs, not '", text, "'"));
  }
  return mcus;
}

const OptionTable<ImagesArgs>& ImagesOptions() {
  using Args = ImagesArgs;
  static const auto* table = new OptionTable<Args>({
      OutputRows<Args>("number of shards"),
      {Option("seed", "S", Field<Args>(&Args::seed), "seed of the shuffle of the examples",
              {.parse = UnsignedInteger}),
       Option("split", "NAME", Field<Args>(&Args::split), "prefix of the shard names",
              {.parse = ShardPrefix}),
       Option("restart-interval", "MCUS", Field<Args>(&Args::restart_interval),
              "re-encode each JPEG losslessly (same pixels) with a restart marker every MCUS MCUs, "
              "so that crop decodes skip the rows and columns outside the crop without "
              "entropy-decoding them; 0 copies the bytes",
              {.parse = RestartInterval}),
       Flag("skip-bad", Field<Args>(&Args::skip_bad),
            "skip files that are not valid JPEGs (counted) instead of failing")},
      JsonRow<Args>(),
  });
  return *table;
}

// What a conversion of a tree did.
struct ImagesConversion {
  std::vector<std::string> classes;
  std::vector<int64_t> per_class;  // examples written
  int64_t files = 0;
  int64_t skipped = 0;
  int64_t reencoded = 0;  // with restart markers
  int64_t kept = 0;       // as they were: not grayscale or YCbCr
  int shards = 0;         // written: --shards, or one per file when there are fewer files
};

// One file read and checked: its header, or why it cannot be written.
struct PreparedImage {
  std::string bytes;  // what goes into the record
  absl::StatusOr<JpegHeader> header = absl::UnknownError("not prepared");
  bool read = false;       // the file could be read (else header holds the read error)
  bool reencoded = false;  // with restart markers
  bool kept = false;       // as it was: not grayscale or YCbCr
};

// Reads `path` and checks the JPEG, re-encoding it with restart markers when `restart_interval`
// is set. Every byte of the entropy-coded data is read (the re-encoding reads the coefficients;
// otherwise a decode at 1/8 scale, which skips most of the inverse DCT): a truncated or
// undecodable JPEG whose header is fine would fail training's decode.
PreparedImage PrepareImage(const std::string& path, int restart_interval) {
  PreparedImage image;
  absl::StatusOr<Tensor> contents = ReadFile(path);
  if (!contents.ok()) {
    image.header = contents.status();
    return image;
  }
  image.read = true;
  image.bytes = std::move(*contents->data<std::string>());
  image.header = [&]() -> absl::StatusOr<JpegHeader> {
    SLUICE_ASSIGN_OR_RETURN(JpegHeader header, ReadJpegHeader(image.bytes));
    if (restart_interval > 0) {
      absl::StatusOr<std::string> with_restarts =
          AddJpegRestartMarkers(image.bytes, restart_interval);
      if (with_restarts.ok()) {
        image.bytes = *std::move(with_restarts);
        image.reencoded = true;
        return header;
      }
      if (!absl::IsFailedPrecondition(with_restarts.status())) return with_restarts.status();
      image.kept = true;  // copied as it is: checked below
    }
    SLUICE_RETURN_IF_ERROR(DecodeJpeg(image.bytes, {.scale_denom = 8}).status());
    return header;
  }();
  return image;
}

// Writes `files` (in this order) into shards and the class names into args.out. Blocks of files
// are read and checked in parallel (the check decodes each), then written in order.
absl::Status WriteImageShards(const ImagesArgs& args, const std::vector<ImageFile>& files,
                              ImagesConversion& conversion) {
  ShardedWriter writer(args.out, args.split, args.shards, static_cast<int64_t>(files.size()));
  conversion.shards = writer.num_shards();
  if (conversion.shards < args.shards) {
    std::fprintf(stderr,
                 "sluice convert images: %zu files: writing %d shards, not %d (one per file)\n",
                 files.size(), conversion.shards, args.shards);
  }
  Progress progress("convert images");
  // A block's files are in memory at once: 256 photos of about 110 KB.
  constexpr size_t kBlock = 256;
  std::vector<PreparedImage> block;
  for (size_t first = 0; first < files.size(); first += kBlock) {
    const size_t count = std::min(kBlock, files.size() - first);
    block.assign(count, PreparedImage());
    tbb::parallel_for(size_t{0}, count, [&](size_t k) {
      block[k] = PrepareImage(files[first + k].path, args.restart_interval);
    });
    for (size_t k = 0; k < count; ++k) {
      const size_t i = first + k;
      const ImageFile& file = files[i];
      PreparedImage& image = block[k];
      if (!image.header.ok()) {
        const std::string message =
            image.read ? absl::StrCat(file.path, ": not a valid JPEG (", image.bytes.size(),
                                      " bytes): ", image.header.status().message())
                       : std::string(image.header.status().message());
        if (!args.skip_bad) {
          return image.read ? absl::InvalidArgumentError(message) : image.header.status();
        }
        PrintError("images", absl::StrCat("skipped ", message));
        ++conversion.skipped;
        continue;
      }
      conversion.reencoded += image.reencoded;
      conversion.kept += image.kept;
      SLUICE_RETURN_IF_ERROR(
          writer.Write(static_cast<int64_t>(i),
                       ImageExample(std::move(image.bytes), file.label, image.header->height,
                                    image.header->width, "jpeg")));
      ++conversion.per_class[file.label];
      progress.Update(static_cast<int64_t>(i + 1), static_cast<int64_t>(files.size()));
    }
  }
  SLUICE_RETURN_IF_ERROR(writer.Finish());
  SLUICE_RETURN_IF_ERROR(WriteLabels(args.out, conversion.classes));
  SLUICE_RETURN_IF_ERROR(writer.Commit());
  return absl::OkStatus();
}

absl::StatusOr<ImagesConversion> ConvertImages(const ImagesArgs& args, const std::string& root) {
  ImagesConversion conversion;
  std::vector<ImageFile> files;
  SLUICE_RETURN_IF_ERROR(ListImageTree(root, &conversion.classes, &files));
  DeterministicShuffle(files, args.seed);
  bool created = false;
  SLUICE_RETURN_IF_ERROR(MakeDirectory(args.out, created));
  auto failed = RemoveIfLeftEmpty(args.out, created);
  conversion.files = static_cast<int64_t>(files.size());
  conversion.per_class.assign(conversion.classes.size(), 0);
  SLUICE_RETURN_IF_ERROR(WriteImageShards(args, files, conversion));
  std::move(failed).Cancel();
  return conversion;
}

void PrintImagesJson(const ImagesArgs& args, const ImagesConversion& c, double seconds) {
  JsonWriter json;
  json.BeginObject();
  json.Key("out");
  json.String(args.out);
  std::vector<std::pair<const char*, int64_t>> counts = {
      {"examples", c.files - c.skipped}, {"skipped", c.skipped}, {"shards", c.shards}};
  if (args.restart_interval > 0) {  // nothing is re-encoded without it
    counts.insert(counts.end(),
                  {{"reencoded_with_restarts", c.reencoded}, {"kept_without_restarts", c.kept}});
  }
  for (const auto& [key, value] : counts) {
    json.Key(key);
    json.Int(value);
  }
  json.Key("classes");
  json.BeginArray();
  for (size_t i = 0; i < c.classes.size(); ++i) {
    json.BeginObject();
    json.Key("name");
    json.String(c.classes[i]);
    json.Key("examples");
    json.Int(c.per_class[i]);
    json.EndObject();
  }
  json.EndArray();
  PrintSummaryEnd(seconds, json);
}

void PrintImagesSummary(const ImagesArgs& args, const ImagesConversion& c, double seconds) {
  if (args.json) return PrintImagesJson(args, c, seconds);
  for (size_t i = 0; i < c.classes.size(); ++i) {
    std::printf("  %lld  %s\n", static_cast<long long>(i), c.classes[i].c_str());
  }
  std::printf("%s: %lld examples (%lld skipped) of %zu classes in %d shards, in %.2f s\n",
              args.out.c_str(), static_cast<long long>(c.files - c.skipped),
              static_cast<long long>(c.skipped), c.classes.size(), c.shards, seconds);
  if (args.restart_interval > 0) {
    std::printf(
        "re-encoded %lld with a restart marker every %d MCUs; kept %lld as they were "
        "(not grayscale or YCbCr)\n",
        static_cast<long long>(c.reencoded), args.restart_interval, static_cast<long long>(c.kept));
  }
}

int RunImages(int argc, char** argv) {
  CommandLine command_line(
      "sluice convert images",
      "Converts a folder-per-class tree of JPEG files (ROOT/CLASS/*.jpg) into TFRecord shards\n"
      "train-*-of-N.tfrecord. Classes are the folder names sorted, label = index, written to\n"
      "labels.txt. JPEG bytes are copied, not re-encoded (unless --restart-interval); the order\n"
      "is the sorted file list shuffled with --seed, so a conversion is reproducible.");
  command_line.AddPositional("ROOT", "directory with one folder of JPEG files per class");
  ImagesArgs args;
  if (std::optional<int> exit = ImagesOptions().ParseOrReport(command_line, argc, argv, args)) {
    return *exit;
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ImagesConversion> conversion = ConvertImages(args, command_line.positional()[0]);
  if (!conversion.ok())
    return ReportFailure("sluice convert images", conversion.status(), args.json);
  PrintImagesSummary(args, *conversion, SecondsSince(start));
  return kExitOk;
}

std::string ConvertUsage() {
  return "Usage: sluice convert SOURCE [options]\n"
         "\n"
         "Converts a dataset into labeled TFRecord shards. Sources:\n"
         "  fashion-mnist  Fashion-MNIST's IDX files -> train/test shards (JPEG or raw pixels)\n"
         "  images ROOT    a folder-per-class tree of JPEG files -> shards (bytes copied)\n"
         "\n"
         "Run 'sluice convert SOURCE --help' for the options of each.\n";
}

}  // namespace

int RunConvert(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "%s", ConvertUsage().c_str());
    return kExitUsage;
  }
  const absl::string_view source = argv[1];
  if (source == "--help" || source == "-h") {
    std::printf("%s", ConvertUsage().c_str());
    return kExitOk;
  }
  if (source == "fashion-mnist") return RunFashionMnist(argc - 1, argv + 1);
  if (source == "images") return RunImages(argc - 1, argv + 1);
  std::fprintf(stderr,
               "sluice convert: unknown source '%s' (expected fashion-mnist or images)\n"
               "Run 'sluice convert --help' for usage.\n",
               argv[1]);
  return kExitUsage;
}

}  // namespace sluice::tools
