#ifndef SLUICE_IO_EXAMPLE_BUILDER_H_
#define SLUICE_IO_EXAMPLE_BUILDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace sluice {

// Builds a serialized tf.train.Example (for tests, converters and users)
// without protobuf messages. Adding a name again replaces its values.
// Serialize() is deterministic: features sorted by name, int64 and float
// lists packed; the bytes equal protobuf's deterministic serialization.
class ExampleBuilder {
 public:
  ExampleBuilder& AddInt64(std::string name, std::vector<int64_t> values);
  ExampleBuilder& AddFloat(std::string name, std::vector<float> values);
  ExampleBuilder& AddBytes(std::string name, std::vector<std::string> values);

  std::string Serialize() const;

  bool empty() const { return features_.empty(); }
  void Clear() { features_.clear(); }

 private:
  using Values = std::variant<std::vector<int64_t>, std::vector<float>, std::vector<std::string>>;
  std::map<std::string, Values> features_;
};

}  // namespace sluice

#endif  // SLUICE_IO_EXAMPLE_BUILDER_H_
