#include "profiler/trace_json.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "core/json_writer.h"

namespace sluice::profiler {

std::string TraceJson(const std::vector<ThreadTrace>& threads, int64_t pid) {
  JsonWriter w;
  w.BeginObject();
  w.Key("displayTimeUnit");
  w.String("ms");
  w.Key("traceEvents");
  w.BeginArray();
  w.BeginObject();
  w.Key("ph");
  w.String("M");
  w.Key("name");
  w.String("process_name");
  w.Key("pid");
  w.Int(pid);
  w.Key("args");
  w.BeginObject();
  w.Key("name");
  w.String("sluice");
  w.EndObject();
  w.EndObject();
  for (const ThreadTrace& t : threads) {
    w.BeginObject();
    w.Key("ph");
    w.String("M");
    w.Key("name");
    w.String("thread_name");
    w.Key("pid");
    w.Int(pid);
    w.Key("tid");
    w.Int(t.tid);
    w.Key("args");
    w.BeginObject();
    w.Key("name");
    w.String(t.name.empty() ? absl::StrCat("thread ", t.tid) : t.name);
    w.EndObject();
    w.EndObject();
    for (const TraceEvent& e : t.events) {
      w.BeginObject();
      w.Key("ph");
      w.String(e.counter ? "C" : "X");
      w.Key("cat");
      w.String(e.category);
      w.Key("name");
      w.String(e.name);
      w.Key("pid");
      w.Int(pid);
      w.Key("tid");
      w.Int(t.tid);
      w.Key("ts");
      w.Double(static_cast<double>(e.start_ns) / 1e3);
      if (e.counter) {
        w.Key("args");
        w.BeginObject();
        w.Key("value");
        w.Double(e.value);
        w.EndObject();
      } else {
        w.Key("dur");
        w.Double(static_cast<double>(e.dur_ns) / 1e3);
      }
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

absl::StatusOr<std::string> Gzip(absl::string_view data) {
  z_stream z{};
  // 15 + 16: a gzip header and trailer rather than zlib's.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError(absl::StrCat("gzip: deflate returned ", rc));
  return out;
}

}  // namespace sluice::profiler
