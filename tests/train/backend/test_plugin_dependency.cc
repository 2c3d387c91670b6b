// A library that libsluice_test_plugin_missing_dependency.so needs and cannot find
// (tests/CMakeLists.txt): what a CUDA plugin sees on a machine without cuDNN.
namespace sluice::train::backend::testing {

int TestPluginDependency() { return 1; }

}  // namespace sluice::train::backend::testing
