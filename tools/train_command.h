#ifndef SLUICE_TOOLS_TRAIN_COMMAND_H_
#define SLUICE_TOOLS_TRAIN_COMMAND_H_

namespace sluice::tools {

// `sluice train --data DIR [options]`: trains mlp, cnn, resnet-small or resnet-20 on the TFRecords
// of `sluice convert fashion-mnist`, then prints the test accuracy and images/s (`--json`:
// test_accuracy, train_images_per_second). argv[0] is "train". Returns 0 on success, 1 when
// training failed, 2 for a bad command line.
int RunTrain(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_TRAIN_COMMAND_H_
