// The trace's gzip (profiler/trace_json.h), as TensorBoard reads it: zlib's own inflate, in gzip
// mode, gives the input back.
#include "profiler/trace_json.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace sluice::profiler {
namespace {

std::string GunzipForTraceTest(const std::string& gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(1 << 20, '\0');
  std::string all;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    all.append(out.data(), out.size() - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return all;
}

TEST(TraceGzipTest, InflatesBackToTheTrace) {
  std::string trace = "{\"traceEvents\": [";
  for (int i = 0; i < 50000; ++i) {
    trace +=
        "{\"name\": \"Map[" + std::to_string(i % 7) + "]\", \"ts\": " + std::to_string(i) + "}, ";
  }
  trace += "{}]}";
  absl::StatusOr<std::string> gz = Gzip(trace);
  ASSERT_TRUE(gz.ok()) << gz.status();
  EXPECT_LT(gz->size(), trace.size() / 4);
  EXPECT_EQ(GunzipForTraceTest(*gz), trace);
  absl::StatusOr<std::string> empty = Gzip("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(GunzipForTraceTest(*empty), "");
}

}  // namespace
}  // namespace sluice::profiler
