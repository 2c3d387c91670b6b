#ifndef SLUICE_TOOLS_CONVERT_COMMAND_H_
#define SLUICE_TOOLS_CONVERT_COMMAND_H_

namespace sluice::tools {

// `sluice convert fashion-mnist --out DIR ...` and `sluice convert images ROOT --out DIR ...`:
// turn a dataset in its distributed form into labeled TFRecord shards (image/encoded,
// image/class/label, image/height, image/width, image/format) plus labels.txt. argv[0] is
// "convert". Returns 0 on success, 1 when the conversion failed, 2 for a bad command line.
int RunConvert(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_COMMAND_H_
