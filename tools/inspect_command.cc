#include "tools/inspect_command.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/json_writer.h"
#include "io/compression.h"
#include "io/proto/example.pb.h"
#include "io/tfrecord_format.h"
#include "io/tfrecord_reader.h"
#include "tools/command_line.h"

namespace sluice::tools {
namespace {

// Longer bytes values are shown by length only: images would flood the output.
constexpr size_t kMaxBytesShown = 64;
constexpr int64_t kAllRecords = std::numeric_limits<int64_t>::max();

struct InspectOptions {
  int64_t records_to_show = 5;
  std::optional<Compression> compression;  // nullopt: guessed from each file's suffix.
  bool json = false;
  bool skip_corrupt = false;
};

struct FileResult {
  int64_t records = 0;
  int64_t skipped = 0;
  bool ok = true;
};

const char* KindName(const proto::Feature& feature) {
  switch (feature.kind_case()) {
    case proto::Feature::kInt64List:
      return "int64_list";
    case proto::Feature::kFloatList:
      return "float_list";
    case proto::Feature::kBytesList:
      return "bytes_list";
    case proto::Feature::KIND_NOT_SET:
      break;
  }
  return "none";  // TensorFlow accepts a Feature with no list set.
}

int ValueCount(const proto::Feature& feature) {
  switch (feature.kind_case()) {
    case proto::Feature::kInt64List:
      return feature.int64_list().value_size();
    case proto::Feature::kFloatList:
      return feature.float_list().value_size();
    case proto::Feature::kBytesList:
      return feature.bytes_list().value_size();
    case proto::Feature::KIND_NOT_SET:
      break;
  }
  return 0;
}

// Protobuf maps iterate in no fixed order; output must be deterministic.
std::vector<std::pair<const std::string*, const proto::Feature*>> SortedFeatures(
    const proto::Example& example) {
  std::vector<std::pair<const std::string*, const proto::Feature*>> features;
  for (const auto& [name, feature] : example.features().feature()) {
    features.emplace_back(&name, &feature);
  }
  std::sort(features.begin(), features.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  return features;
}

std::string ExampleJson(const proto::Example& example) {
  JsonWriter json;
  json.BeginObject();
  for (const auto& [name, feature] : SortedFeatures(example)) {
    json.Key(*name);
    json.BeginObject();
    json.Key("type");
    json.String(KindName(*feature));
    json.Key("values");
    json.BeginArray();
    switch (feature->kind_case()) {
      case proto::Feature::kInt64List:
        for (int64_t v : feature->int64_list().value()) json.Int(v);
        break;
      case proto::Feature::kFloatList:
        for (float v : feature->float_list().value()) json.Float(v);
        break;
      case proto::Feature::kBytesList:
        for (const std::string& v : feature->bytes_list().value()) {
          if (v.size() <= kMaxBytesShown) {
            json.String(v);
          } else {
            json.BeginObject();
            json.Key("length");
            json.Int(static_cast<int64_t>(v.size()));
            json.EndObject();
          }
        }
        break;
      case proto::Feature::KIND_NOT_SET:
        break;
    }
    json.EndArray();
    json.EndObject();
  }
  json.EndObject();
  return json.str();
}

// "    id    int64_list  1 value" lines, names and types in aligned columns.
std::string ExampleText(const proto::Example& example) {
  auto features = SortedFeatures(example);
  size_t name_width = 0;
  for (const auto& [name, feature] : features) name_width = std::max(name_width, name->size());
  std::string text;
  for (const auto& [name, feature] : features) {
    int count = ValueCount(*feature);
    absl::string_view kind = KindName(*feature);
    absl::StrAppend(&text, "    ", *name, std::string(name_width - name->size() + 2, ' '), kind,
                    std::string(kind.size() < 12 ? 12 - kind.size() : 1, ' '), count,
                    count == 1 ? " value\n" : " values\n");
  }
  return text;
}

void PrintOut(absl::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// Errors go to stderr; flushing stdout first keeps the two in order on a terminal.
void PrintError(absl::string_view message) {
  std::fflush(stdout);
  std::fprintf(stderr, "sluice inspect: %.*s\n", static_cast<int>(message.size()), message.data());
}

// The reader's messages name the file; this makes sure of it for any status.
std::string WithPath(const std::string& path, const absl::Status& status) {
  if (absl::StrContains(status.message(), path)) return std::string(status.message());
  return absl::StrCat(path, ": ", status.message());
}

std::string SummaryJson(const std::string& path, const FileResult& result, Compression compression,
                        const std::string* error) {
  JsonWriter json;
  json.BeginObject();
  json.Key("file");
  json.String(path);
  json.Key("records");
  json.Int(result.records);
  json.Key("skipped");
  json.Int(result.skipped);
  json.Key("compression");
  json.String(CompressionName(compression));
  if (error != nullptr) {
    json.Key("error");
    json.String(*error);
  }
  json.EndObject();
  return json.str();
}

FileResult InspectFile(const std::string& path, const InspectOptions& options) {
  FileResult result;
  Compression compression = options.compression.value_or(GuessCompression(path));
  absl::StatusOr<std::unique_ptr<TFRecordReader>> opened =
      TFRecordReader::Open(path, {.compression = compression,
                                  .verify_crc = true,
                                  .skip_corrupt = options.skip_corrupt,
                                  .on_skipped = [](const absl::Status& why) {
                                    PrintError(absl::StrCat("skipped ", why.message()));
                                  }});
  if (!opened.ok()) {
    std::string error = WithPath(path, opened.status());
    PrintError(error);
    if (options.json) PrintOut(SummaryJson(path, result, compression, &error) + "\n");
    result.ok = false;
    return result;
  }
  TFRecordReader& reader = **opened;
  if (!options.json) PrintOut(absl::StrCat(path, "\n"));

  std::string record;
  std::optional<std::string> error;
  while (true) {
    absl::StatusOr<bool> more = reader.ReadRecord(&record);  // on_skipped names what it skips
    if (!more.ok()) {
      error = WithPath(path, more.status());
      break;
    }
    if (!*more) break;
    const int64_t good_records = reader.records_read() - reader.records_skipped();
    if (good_records > options.records_to_show) continue;  // Only counting from here on.

    const int64_t record_index = reader.records_read() - 1;
    const uint64_t record_offset = reader.offset() - record.size() - tfrecord::kOverhead;
    proto::Example example;
    if (!example.ParseFromString(record)) {
      PrintError(absl::StrCat(path, ": record ", record_index, " at offset ", record_offset, " (",
                              record.size(), " bytes) is not a tf.train.Example"));
      if (options.json) {
        JsonWriter json;
        json.Null();  // Keeps one line per record, and cannot clash with a feature name.
        PrintOut(json.str() + "\n");
      } else {
        PrintOut(absl::StrCat("  record ", record_index, ": not a tf.train.Example (",
                              record.size(), " bytes)\n"));
      }
      continue;
    }
    if (options.json) {
      PrintOut(ExampleJson(example) + "\n");
    } else {
      int count = example.features().feature_size();
      PrintOut(absl::StrCat("  record ", record_index, ": ", count,
                            count == 1 ? " feature\n" : " features\n", ExampleText(example)));
    }
  }

  result.records = reader.records_read() - reader.records_skipped();
  result.skipped = reader.records_skipped();
  const bool read_through = !error.has_value();
  if (read_through && result.records == 0 && result.skipped > 0) {
    // Nothing but skipped bytes: not a TFRecord file (or corrupt throughout), not an empty one.
    error = absl::StrCat(path, ": no valid record, ", result.skipped,
                         " skipped: not a TFRecord file, or corrupt throughout (compression: ",
                         CompressionName(compression), ")");
  }
  result.ok = !error.has_value();
  if (error.has_value()) PrintError(*error);
  if (options.json) {
    PrintOut(SummaryJson(path, result, compression, error.has_value() ? &*error : nullptr) + "\n");
  } else if (error.has_value() && read_through) {
    PrintOut(absl::StrCat("  0 records, ", result.skipped,
                          " skipped: no valid record (compression: ", CompressionName(compression),
                          ")\n"));
  } else if (error.has_value()) {
    PrintOut(absl::StrCat("  stopped by an error after ", result.records, " records, ",
                          result.skipped, " skipped (compression: ", CompressionName(compression),
                          ")\n"));
  } else {
    // The skipped records are the ones whose checks failed: "verified" is of those read.
    PrintOut(absl::StrCat("  ", result.records, " records, ", result.skipped,
                          result.skipped > 0 ? " skipped (corrupt), the others' CRCs verified"
                                             : " skipped, CRCs verified",
                          " (compression: ", CompressionName(compression), ")\n"));
  }
  return result;
}

absl::StatusOr<int64_t> ParseRecordsToShow(absl::string_view text) {
  if (text == "all") return kAllRecords;
  int64_t n;
  if (!absl::SimpleAtoi(text, &n) || n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--records takes a count >= 0 or 'all', not '", text, "'"));
  }
  return n;
}

}  // namespace

int RunInspect(int argc, char** argv) {
  CommandLine command_line(
      "sluice inspect",
      "Counts the records of TFRecord files, verifies every CRC and shows each feature's\n"
      "name, type and number of values for the first records. A corrupt record stops\n"
      "the file with exit status 1 unless --skip-corrupt is given.");
  command_line.AddPositional("FILE", "TFRecord files to read", /*repeated=*/true);
  command_line.AddOption("records", "N", "5",
                         "records to show per file: a count, 0 for none, or 'all'");
  command_line.AddOption("compression", "NAME", "auto",
                         "none, gzip or zlib; auto guesses from the suffix (.gz, .zlib)");
  command_line.AddFlag("json",
                       "print one JSON object per record, then one summary object per file");
  command_line.AddFlag("skip-corrupt", "read past corrupt records and count them as skipped");
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;

  InspectOptions options;
  absl::StatusOr<int64_t> records = ParseRecordsToShow(command_line.Value("records"));
  if (!records.ok()) return command_line.ReportUsageError(records.status().message());
  options.records_to_show = *records;
  if (const std::string& name = command_line.Value("compression"); name != "auto") {
    absl::StatusOr<Compression> compression = CompressionFromName(name);
    if (!compression.ok()) {
      return command_line.ReportUsageError(
          absl::StrCat("--compression takes none, gzip, zlib or auto, not '", name, "'"));
    }
    options.compression = *compression;
  }
  options.json = command_line.Flag("json");
  options.skip_corrupt = command_line.Flag("skip-corrupt");

  const std::vector<std::string>& paths = command_line.positional();
  FileResult total;
  int failed = 0;
  for (const std::string& path : paths) {
    FileResult result = InspectFile(path, options);
    total.records += result.records;
    total.skipped += result.skipped;
    if (!result.ok) ++failed;
  }
  if (paths.size() > 1) {
    if (options.json) {
      JsonWriter json;
      json.BeginObject();
      json.Key("files");
      json.Int(static_cast<int64_t>(paths.size()));
      json.Key("records");
      json.Int(total.records);
      json.Key("skipped");
      json.Int(total.skipped);
      json.Key("failed");
      json.Int(failed);
      json.EndObject();
      PrintOut(json.str() + "\n");
    } else {
      PrintOut(absl::StrCat("total: ", paths.size(), " files, ", total.records, " records, ",
                            total.skipped, " skipped, ", failed, " failed\n"));
    }
  }
  std::fflush(stdout);
  return failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace sluice::tools
