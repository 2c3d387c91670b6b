#ifndef SLUICE_TOOLS_IMPORT_COMMAND_H_
#define SLUICE_TOOLS_IMPORT_COMMAND_H_

namespace sluice::tools {

// `sluice import MODEL.onnx --out DIR`: builds a functional model from an ONNX file
// (train/import/onnx_import.h) and saves it (train/fit/saved_model.h), so that `sluice predict`
// and `sluice export` take it. argv[0] is "import". Returns 0 on success, 1
// when the file cannot be imported or the model saved, 2 for a bad command line.
int RunImport(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IMPORT_COMMAND_H_
