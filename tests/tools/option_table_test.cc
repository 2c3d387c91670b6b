#include "tools/option_table.h"

#include <climits>
#include <cstdint>
#include <optional>

#include "gtest/gtest.h"

namespace sluice::tools {
namespace {

// An integer option's bound never exceeds what its field holds: the int64_t parsed is cast to it.
TEST(OptionTableTest, IntegerOptionsStayWithinTheirType) {
  EXPECT_EQ(option_table_internal::IntegerMax<int>(std::nullopt), INT_MAX);
  EXPECT_EQ(option_table_internal::IntegerMax<int>(1e12), INT_MAX);
  EXPECT_EQ(option_table_internal::IntegerMax<int>(100), 100);
  EXPECT_EQ(option_table_internal::IntegerMax<int64_t>(std::nullopt), INT64_MAX);
  EXPECT_EQ(option_table_internal::IntegerMax<uint64_t>(std::nullopt), INT64_MAX);
  EXPECT_EQ(option_table_internal::IntegerMax<uint8_t>(std::nullopt), 255);
}

}  // namespace
}  // namespace sluice::tools
