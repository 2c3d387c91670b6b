#include "core/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace sluice {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes
// there are not one (overlong forms, surrogates and code points above
// U+10FFFF are invalid, as in RFC 3629).
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto continuation = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!continuation(i + 1) || !continuation(i + 2)) return 0;
    if (b0 == 0xE0 && byte(i + 1) < 0xA0) return 0;  // Overlong.
    if (b0 == 0xED && byte(i + 1) > 0x9F) return 0;  // UTF-16 surrogate.
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!continuation(i + 1) || !continuation(i + 2) || !continuation(i + 3)) return 0;
    if (b0 == 0xF0 && byte(i + 1) < 0x90) return 0;  // Overlong.
    if (b0 == 0xF4 && byte(i + 1) > 0x8F) return 0;  // Above U+10FFFF.
    return 4;
  }
  return 0;  // A stray continuation byte, 0xC0, 0xC1 or 0xF5..0xFF.
}

void AppendQuoted(std::string& out, absl::string_view value) {
  out.push_back('"');
  for (size_t i = 0; i < value.size();) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        size_t length = Utf8SequenceLength(value, i);
        if (c < 0x20 || c == 0x7F || length == 0) {
          char escaped[7];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
          length = 1;
        } else {
          out.append(value.data() + i, length);
        }
        i += length;
        continue;
      }
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_ += ", ";
    has_element_.back() = true;
  }
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  has_element_.push_back(false);
}

void JsonWriter::EndObject() {
  has_element_.pop_back();
  out_.push_back('}');
}

void JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  has_element_.push_back(false);
}

void JsonWriter::EndArray() {
  has_element_.pop_back();
  out_.push_back(']');
}

void JsonWriter::Key(absl::string_view key) {
  BeforeValue();
  AppendQuoted(out_, key);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::String(absl::string_view value) {
  BeforeValue();
  AppendQuoted(out_, value);
}

void JsonWriter::RawValue(absl::string_view json) {
  BeforeValue();
  out_.append(json.data(), json.size());
}

void JsonWriter::Int(int64_t value) {
  BeforeValue();
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_.append(buffer, end);
}

template <typename T>
void JsonWriter::FloatingPoint(T value) {
  if (std::isnan(value)) return String("nan");
  if (std::isinf(value)) return String(value > 0 ? "inf" : "-inf");
  BeforeValue();
  // Without a precision argument, to_chars writes the shortest representation
  // that parses back to exactly `value` (for T's own width: 0.01f is "0.01").
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_.append(buffer, end);
}

void JsonWriter::Float(float value) { FloatingPoint(value); }
void JsonWriter::Double(double value) { FloatingPoint(value); }

void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

}  // namespace sluice
