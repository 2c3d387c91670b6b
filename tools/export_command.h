#ifndef SLUICE_TOOLS_EXPORT_COMMAND_H_
#define SLUICE_TOOLS_EXPORT_COMMAND_H_

namespace sluice::tools {

// `sluice export --model DIR --out FILE.onnx`: loads a saved model (train/fit/saved_model.h) and
// writes it as ONNX (train/export/onnx_export.h). argv[0] is "export". Returns 0 on success, 1
// when the model cannot be loaded or exported, 2 for a bad command line.
int RunExport(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_EXPORT_COMMAND_H_
