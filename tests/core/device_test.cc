#include "core/device.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

TEST(ParseDeviceTest, TakesSluicesPyTorchsAndTensorFlowsNames) {
  const std::pair<const char*, Device> cases[] = {{"cpu", Device::Cpu()},
                                                  {"CPU", Device::Cpu()},
                                                  {"cpu:0", Device::Cpu()},
                                                  {"/cpu:0", Device::Cpu()},
                                                  {"/device:CPU:0", Device::Cpu()},
                                                  {"cuda", Device::Cuda(0)},
                                                  {"cuda:3", Device::Cuda(3)},
                                                  {"gpu", Device::Cuda(0)},
                                                  {"GPU:1", Device::Cuda(1)},
                                                  {"/gpu:2", Device::Cuda(2)},
                                                  {"/device:GPU:1", Device::Cuda(1)}};
  for (const auto& [name, want] : cases) {
    absl::StatusOr<Device> got = ParseDevice(name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, want) << name << " gave " << got->DebugString();
  }
}

TEST(ParseDeviceTest, RefusesOtherNamesSayingWhatItTakes) {
  for (const char* name : {"tpu", "cuda:x", "cuda0", "cpu:1", "cuda:-1", "", "cuda:", "guarded:0",
                           "/device:tpu:0", "cuda:1:2"}) {
    absl::StatusOr<Device> got = ParseDevice(name);
    ASSERT_FALSE(got.ok()) << name;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), std::string("want cpu, cuda or cuda:N, got '") + name + "'");
  }
}

}  // namespace
}  // namespace sluice
