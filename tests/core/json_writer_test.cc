#include "core/json_writer.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(JsonWriterTest, NestsWithPythonSeparators) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a");
  w.Int(1);
  w.Key("b");
  w.BeginArray();
  w.Int(2);
  w.String("x");
  w.Null();
  w.EndArray();
  w.Key("c");
  w.RawValue(R"({"d": true})");
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"a": 1, "b": [2, "x", null], "c": {"d": true}})");
}

TEST(JsonWriterTest, EscapesControlCharactersAndQuotes) {
  JsonWriter w;
  w.String("q\"b\\n\n\x01");
  EXPECT_EQ(w.str(), R"("q\"b\\n\n\u0001")");
}

// The one spelling of non-finite numbers used by every JSON sluice writes.
TEST(JsonWriterTest, NonFiniteNumbersAreStrings) {
  JsonWriter w;
  w.BeginArray();
  w.Double(std::nan(""));
  w.Double(std::numeric_limits<double>::infinity());
  w.Float(-std::numeric_limits<float>::infinity());
  w.Double(0.1);
  w.EndArray();
  EXPECT_EQ(w.str(), R"(["nan", "inf", "-inf", 0.1])");
}

}  // namespace
}  // namespace sluice
