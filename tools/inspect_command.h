#ifndef SLUICE_TOOLS_INSPECT_COMMAND_H_
#define SLUICE_TOOLS_INSPECT_COMMAND_H_

namespace sluice::tools {

// `sluice inspect [options] FILE...`: counts the records of TFRecord files,
// verifies their CRCs and shows the features of the first records, as text or
// as JSON lines. argv[0] is "inspect". Returns 0 when every file was read
// through, 1 when one was missing or corrupt, 2 for a bad command line.
int RunInspect(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_INSPECT_COMMAND_H_
