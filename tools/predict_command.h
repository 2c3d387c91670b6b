#ifndef SLUICE_TOOLS_PREDICT_COMMAND_H_
#define SLUICE_TOOLS_PREDICT_COMMAND_H_

namespace sluice::tools {

// `sluice predict --model DIR FILE...`: loads a saved model (train/fit/saved_model.h) and prints
// the top-k classes, with their names and probabilities, of each JPEG file or of each record of
// a TFRecord file (image/encoded), as text or JSON. argv[0] is "predict". Returns 0 when every
// image was classified, 1 when one could not be read or decoded (the others are still
// printed), 2 for a bad command line.
int RunPredict(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_PREDICT_COMMAND_H_
