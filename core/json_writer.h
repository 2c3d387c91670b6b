#ifndef SLUICE_CORE_JSON_WRITER_H_
#define SLUICE_CORE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace sluice {

// Builds one JSON value into a string, on one line, with Python's default
// separators (`{"a": 1, "b": [2, 3]}`). Commas are placed automatically; the
// caller nests Begin/End calls correctly and, inside an object, calls Key()
// before each value.
//
//   JsonWriter w;
//   w.BeginObject();
//   w.Key("records");
//   w.Int(100);
//   w.EndObject();
//   w.str();  // {"records": 100}
class JsonWriter {
 public:
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  void Key(absl::string_view key);

  // Bytes that are not valid UTF-8 are written one by one as \u00XX (so a
  // reader sees U+00XX, as if the string were Latin-1); valid UTF-8 passes
  // through, control characters are escaped.
  void String(absl::string_view value);
  void Int(int64_t value);
  // The shortest text that reads back to the same float / double. JSON has no
  // NaN or infinities: they are written as the strings "nan", "inf", "-inf".
  void Float(float value);
  void Double(double value);
  void Null();
  // A value that is already JSON text (another writer's output), inserted as is.
  void RawValue(absl::string_view json);

  const std::string& str() const { return out_; }

 private:
  // Writes the separator owed before a value or key in the current container.
  void BeforeValue();
  template <typename T>
  void FloatingPoint(T value);

  std::string out_;
  // One entry per open container: whether it already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace sluice

#endif  // SLUICE_CORE_JSON_WRITER_H_
