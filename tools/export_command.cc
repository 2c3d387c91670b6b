#include "tools/export_command.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/json_writer.h"
#include "tools/command_line.h"
#include "train/export/onnx_export.h"
#include "train/fit/saved_model.h"

namespace sluice::tools {
namespace {

int ExportModel(const CommandLine& command_line) {
  const std::string& dir = command_line.Value("model");
  const std::string& out = command_line.Value("out");
  if (dir.empty()) return command_line.ReportUsageError("--model DIR is required");
  if (out.empty()) return command_line.ReportUsageError("--out FILE.onnx is required");
  std::error_code not_checked;  // a path that cannot be looked at is left to the write
  if (std::filesystem::is_directory(out, not_checked)) {
    // The write would fail at its rename, naming a temporary file.
    return command_line.ReportUsageError(absl::StrCat(
        "--out ", out, " is a directory; give the ONNX file's path (", out, "/model.onnx, say)"));
  }
  // Opset 13 is the oldest with every operator the exporter writes as it writes it (Softmax over
  // one axis); Debian's ONNX 1.12 knows up to 17.
  absl::StatusOr<int64_t> opset = command_line.IntValue("opset", 13, 17);
  if (!opset.ok()) return command_line.ReportUsageError(opset.status().message());
  const std::string& input_name = command_line.Value("input-name");
  const std::string& output_name = command_line.Value("output-name");
  if (input_name.empty() || output_name.empty()) {
    return command_line.ReportUsageError("--input-name and --output-name must not be empty");
  }
  if (input_name == output_name) {
    return command_line.ReportUsageError(
        absl::StrCat("--input-name and --output-name must differ, both are '", input_name, "'"));
  }
  absl::StatusOr<train::fit::LoadedModel> loaded = train::fit::LoadModel(dir);
  if (!loaded.ok())
    return ReportFailure("sluice export", loaded.status(), command_line.Flag("json"));
  const train::exporting::OnnxExportOptions options{.input_name = input_name,
                                                    .output_name = output_name,
                                                    .opset = *opset,
                                                    .producer_version = SLUICE_VERSION,
                                                    .class_names = loaded->class_names};
  absl::Status s = train::exporting::ExportOnnx(*loaded->model, loaded->input_shape, out, options);
  if (!s.ok()) return ReportFailure("sluice export", s, command_line.Flag("json"));
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(out, ec);
  Shape input = loaded->input_shape;
  std::string dims = "batch";
  for (int i = 1; i < input.rank(); ++i) absl::StrAppend(&dims, ", ", input.dim(i));
  if (command_line.Flag("json")) {
    JsonWriter json;
    json.BeginObject();
    json.Key("model");
    json.String(dir);
    json.Key("onnx");
    json.String(out);
    json.Key("bytes");
    json.Int(ec ? -1 : static_cast<int64_t>(bytes));
    json.Key("opset");
    json.Int(*opset);
    json.Key("input");
    json.String(options.input_name);
    json.Key("output");
    json.String(options.output_name);
    json.EndObject();
    std::printf("%s\n", json.str().c_str());
  } else {
    std::printf("sluice export: wrote %s (%lld bytes, opset %lld): %s [%s] float32 NHWC -> %s\n",
                out.c_str(), static_cast<long long>(ec ? 0 : bytes), static_cast<long long>(*opset),
                options.input_name.c_str(), dims.c_str(), options.output_name.c_str());
  }
  return 0;
}

}  // namespace

int RunExport(int argc, char** argv) {
  CommandLine command_line(
      "sluice export",
      "Writes a model saved by `sluice train --save DIR` (or train::fit::SaveModel) as an ONNX\n"
      "file, for ONNX Runtime, TensorRT or OpenVINO: inference mode (dropout left out, batch\n"
      "norm with its moving statistics), float32 NHWC input as in training (scaled to [0, 1]\n"
      "as `sluice train` and `sluice predict` scale it) with a dynamic batch dimension, and\n"
      "the model's logits as the output. The file is written whole or not at all.");
  command_line.AddOption("model", "DIR", "", "the saved model's directory (required)");
  command_line.AddOption("out", "FILE", "", "the ONNX file to write (required)");
  command_line.AddOption("opset", "N", "13", "the ONNX opset version, 13 to 17");
  command_line.AddOption("input-name", "NAME", "input", "the graph input's name");
  command_line.AddOption("output-name", "NAME", "output", "the graph output's name");
  command_line.AddFlag("json", "print one JSON object: model, onnx, bytes, opset, input, output");
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;
  return ExportModel(command_line);
}

}  // namespace sluice::tools
