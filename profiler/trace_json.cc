#include "profiler/trace_json.h"

#include <zlib.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/json_writer.h"
#include "core/status_macros.h"
#include "io/compression.h"

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
  // io's compressor feeds zlib in slices: its avail_in is 32 bits, and a trace of 4 GiB or more
  // given to deflate at once was compressed modulo 4 GiB, into a valid gzip of a cut JSON.
  std::string out;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ZlibCompressor> gzip,
                          ZlibCompressor::Create(Compression::kGzip, Z_DEFAULT_COMPRESSION,
                                                 [&out](absl::string_view piece) {
                                                   out.append(piece.data(), piece.size());
                                                   return absl::OkStatus();
                                                 }));
  SLUICE_RETURN_IF_ERROR(gzip->Write(data));
  SLUICE_RETURN_IF_ERROR(gzip->Finish());
  return out;
}

}  // namespace sluice::profiler
