// Each test of the train suite starts the layer seed sequence (train/layers/layer_seed.h) afresh,
// so that what its unseeded layers draw does not depend on the tests run before it in the same
// process, which gtest's shards and filters change.
#include <gtest/gtest.h>

#include "train/layers/layer_seed.h"

namespace sluice::train {
namespace {

class RestartLayerSeeds : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { layers::SetRandomSeed(0); }
};

// Registered before main runs the tests; the listener list owns it.
const bool restart_layer_seeds_registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new RestartLayerSeeds);
  return true;
}();

}  // namespace
}  // namespace sluice::train
