// The plugins that plugin_test.cc loads: tests/CMakeLists.txt builds one from this file for each
// SLUICE_TEST_PLUGIN_* kind. Like libsluice_cuda.so, each calls a function of the program that
// loads it, which that program exports.
#include "train/backend/plugin_config.h"

namespace sluice::train::backend::testing {
// In plugin_test.cc, in train_tests.
void NoteTestPluginRegistered();
#ifdef SLUICE_TEST_PLUGIN_MISSING_DEPENDENCY
// In libsluice_test_plugin_dependency.so, which the dynamic linker will not find.
int TestPluginDependency();
#endif
}  // namespace sluice::train::backend::testing

extern "C" {

#ifdef SLUICE_TEST_PLUGIN_NOT_A_PLUGIN
__attribute__((visibility("default"))) int sluice_test_not_a_plugin() { return 1; }
#else
__attribute__((visibility("default"))) const char* sluice_plugin_abi() {
#ifdef SLUICE_TEST_PLUGIN_OTHER_ABI
  return "0.0.1 another compiler";
#else
  return SLUICE_PLUGIN_ABI;
#endif
}

__attribute__((visibility("default"))) void sluice_plugin_register() {
#ifdef SLUICE_TEST_PLUGIN_MISSING_DEPENDENCY
  (void)sluice::train::backend::testing::TestPluginDependency();
#endif
  sluice::train::backend::testing::NoteTestPluginRegistered();
}
#endif

}  // extern "C"
