#include "tools/import_command.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/json_writer.h"
#include "tools/command_line.h"
#include "train/fit/saved_model.h"
#include "train/import/onnx_import.h"
#include "train/layers/summary.h"

namespace sluice::tools {
namespace {

int ImportModel(const CommandLine& command_line) {
  if (command_line.positional().size() != 1) {
    return command_line.ReportUsageError("one ONNX file is required");
  }
  const std::string& path = command_line.positional()[0];
  const std::string& out = command_line.Value("out");
  if (out.empty()) return command_line.ReportUsageError("--out DIR is required");
  absl::StatusOr<int64_t> height = command_line.IntValue("height", 0, 1 << 20);
  if (!height.ok()) return command_line.ReportUsageError(height.status().message());
  absl::StatusOr<int64_t> width = command_line.IntValue("width", 0, 1 << 20);
  if (!width.ok()) return command_line.ReportUsageError(width.status().message());
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> class_names;  // those `sluice export` wrote, if any
  absl::StatusOr<std::unique_ptr<train::layers::Model>> model = train::importing::ImportOnnx(
      path, {.height = *height, .width = *width, .name = command_line.Value("name")}, &class_names);
  if (!model.ok()) return ReportFailure("sluice import", model.status(), command_line.Flag("json"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Shape input = (*model)->inputs()[0].shape();
  // Names are only of use one per output class; the file is not trusted to agree.
  const Shape output = (*model)->outputs()[0].shape();
  if (!class_names.empty() &&
      (output.rank() != 2 || output.dim(1) != static_cast<int64_t>(class_names.size()))) {
    std::fprintf(stderr,
                 "sluice import: warning: the file names %zu classes for an output of shape %s: "
                 "not kept\n",
                 class_names.size(), output.DebugString().c_str());
    class_names.clear();
  }
  absl::Status saved = train::fit::SaveModel(**model, input, out, {.class_names = class_names});
  if (!saved.ok()) return ReportFailure("sluice import", saved, command_line.Flag("json"));
  int64_t parameters = 0;
  for (train::autodiff::Variable* v : (*model)->Variables()) {
    parameters += v->shape().num_elements();
  }
  std::string dims = "batch";
  for (int i = 1; i < input.rank(); ++i) absl::StrAppend(&dims, ", ", input.dim(i));
  if (command_line.Flag("summary")) {
    // With --json, stdout is the JSON object's alone: the summary goes to stderr.
    std::fprintf(command_line.Flag("json") ? stderr : stdout, "%s",
                 train::layers::Summary(**model).c_str());
  }
  if (command_line.Flag("json")) {
    JsonWriter json;
    json.BeginObject();
    json.Key("onnx");
    json.String(path);
    json.Key("model");
    json.String(out);
    json.Key("layers");
    json.Int(static_cast<int64_t>((*model)->Children().size()));
    json.Key("parameters");
    json.Int(parameters);
    json.Key("input");
    json.BeginArray();
    for (int i = 1; i < input.rank(); ++i) json.Int(input.dim(i));
    json.EndArray();
    json.Key("seconds");
    json.Double(seconds);
    json.EndObject();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  std::printf(
      "sluice import: %s -> %s: %zu layers, %lld parameters, input [%s] float32 NHWC, "
      "imported in %.2f s\n",
      path.c_str(), out.c_str(), (*model)->Children().size(), static_cast<long long>(parameters),
      dims.c_str(), seconds);
  return 0;
}

}  // namespace

int RunImport(int argc, char** argv) {
  CommandLine command_line(
      "sluice import",
      "Builds a model from an ONNX file (torch.onnx.export, tf2onnx, a model zoo's) with its\n"
      "weights and saves it as `sluice train --save` does, for `sluice predict` and\n"
      "`sluice export`. The model runs in sluice's layout: float32 NHWC input where the\n"
      "file's is NCHW. Common CNN operators are read (docs/training.md, \"ONNX import\"); any\n"
      "other is an error naming its node, and nothing is saved. Weights kept in other files\n"
      "(ONNX's external data) are read from the model's folder.");
  command_line.AddPositional("MODEL.onnx", "the ONNX file");
  command_line.AddOption("out", "DIR", "", "the directory to save the model in (required)");
  command_line.AddOption("height", "N", "0",
                         "the input's height, for a file that leaves it free or to run a fully "
                         "convolutional network at another size (0: the file's)");
  command_line.AddOption("width", "N", "0", "the input's width, as --height");
  command_line.AddOption("name", "NAME", "", "the model's name (default: the ONNX graph's)");
  command_line.AddFlag("summary", "print the model's summary (layers, shapes, parameters)");
  command_line.AddFlag("json",
                       "print one JSON object: onnx, model, layers, parameters, input, "
                       "seconds");
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;
  return ImportModel(command_line);
}

}  // namespace sluice::tools
