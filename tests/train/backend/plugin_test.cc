// Loading device plugins (train/backend/plugin.h) with the test plugins of test_plugin.cc, in
// every build: what libsluice_cuda.so goes through, without CUDA.
#include "train/backend/plugin.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string>

#include "train/backend/plugin_config.h"

namespace sluice::train::backend {
namespace testing {

std::atomic<int> registrations{0};

// Called back by the test plugins, from their sluice_plugin_register: they bind to this
// program's exported symbols, as the CUDA plugin binds to sluice's.
void NoteTestPluginRegistered() { ++registrations; }

}  // namespace testing

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TestPlugin(const std::string& kind) {
  return std::string(SLUICE_TEST_PLUGIN_DIR) + "/libsluice_test_plugin_" + kind + ".so";
}

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(PluginTest, LoadsAndRegistersThroughTheProgramsOwnSymbols) {
  const int before = testing::registrations;
  absl::Status status = LoadPluginFile(TestPlugin("good"));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(testing::registrations, before + 1);
}

// What libsluice_cuda.so calls in its host (train/backend/plugin.cc's host interface) binds to
// this program's exported functions and works.
TEST(PluginTest, APluginCallsTheHostInterface) {
  const std::string path = TestPlugin("host_interface");
  absl::Status status = LoadPluginFile(path);
  ASSERT_TRUE(status.ok()) << status;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto* checks = reinterpret_cast<int (*)()>(dlsym(handle, "sluice_test_host_interface_checks"));
  ASSERT_NE(checks, nullptr);
  EXPECT_EQ(checks(), 4);
  dlclose(handle);  // the loader's own reference keeps it loaded
}

TEST(PluginTest, APluginOfAnotherBuildIsRefused) {
  const int before = testing::registrations;
  absl::Status status = LoadPluginFile(TestPlugin("other_abi"));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("libsluice_test_plugin_other_abi.so: built for sluice "
                                          "0.0.1 another compiler, but this program is sluice " +
                                          std::string(SLUICE_PLUGIN_ABI)));
  EXPECT_EQ(testing::registrations, before);  // refused before it registered anything
}

TEST(PluginTest, AMissingLibraryIsNamedAsTheDynamicLinkerNamesIt) {
  // As a CUDA plugin on a machine without cuDNN: "...libsluice_cuda.so: libcudnn.so.9: cannot
  // open shared object file: No such file or directory".
  const std::string path = TestPlugin("missing_dependency");
  absl::Status status = LoadPluginFile(path);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              StartsWith(path + ": libsluice_test_plugin_dependency.so: cannot open shared "
                                "object file"));
}

TEST(PluginTest, ALibraryThatIsNoPluginOrNoFileIsRefused) {
  absl::Status status = LoadPluginFile(TestPlugin("not_a_plugin"));
  EXPECT_THAT(status.message(), HasSubstr("not a sluice plugin (it exports no sluice_plugin_abi"));
  const std::string nowhere = "/nonexistent-sluice/libsluice_cuda.so";
  status = LoadPluginFile(nowhere);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), StartsWith(nowhere + ": "));
  EXPECT_THAT(status.message(), HasSubstr("cannot open shared object file"));
}

TEST(PluginTest, SearchPathEnvironmentFirstThenBesideTheProgramThenInstalledThenTheLinker) {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  {
    ScopedEnv unset("SLUICE_CUDA_PLUGIN", "");
    EXPECT_THAT(PluginSearchPath(DeviceType::kCuda),
                ElementsAre(dir + "/libsluice_cuda.so", dir + "/../lib/libsluice_cuda.so",
                            std::string(SLUICE_INSTALL_FULL_LIBDIR) + "/libsluice_cuda.so",
                            "libsluice_cuda.so"));
  }
  {
    ScopedEnv chosen("SLUICE_CUDA_PLUGIN", "/opt/x/libsluice_cuda.so");
    EXPECT_THAT(PluginSearchPath(DeviceType::kCuda), ElementsAre("/opt/x/libsluice_cuda.so"));
  }
  EXPECT_TRUE(PluginSearchPath(DeviceType::kCpu).empty());
  EXPECT_TRUE(PluginSearchPath(DeviceType::kGuarded).empty());
}

TEST(PluginTest, WithoutTheCudaPluginInTheBuildCudaSaysSo) {
  if (PluginBuilt(DeviceType::kCuda)) GTEST_SKIP() << "this build has libsluice_cuda.so";
  absl::Status status = LoadPlugin(DeviceType::kCuda);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("sluice was built without CUDA"));
  EXPECT_EQ(LoadPlugin(DeviceType::kCpu).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::backend
