#ifndef SLUICE_TESTS_FUZZ_SAVED_ELEMENTS_H_
#define SLUICE_TESTS_FUZZ_SAVED_ELEMENTS_H_

// Shared by the targets whose files hold saved elements (file_cache, saved_dataset): the element a
// payload holds, and the check that a reader hands back exactly the elements of a valid file.

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "dataset/dataset_base.h"
#include "dataset/iterator.h"
#include "dataset/proto/iterator_state.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice::fuzz {

// The element a payload (a serialized ElementProto) holds, or an error when it holds none.
inline absl::StatusOr<Element> ElementFromPayload(absl::string_view payload) {
  proto::ElementProto element;
  if (!element.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::DataLossError("not an element");
  }
  return ElementFromProto(element);
}

// What an iterator yields: its elements up to the end, the first error, or 10,000 elements.
struct ReadOut {
  std::vector<Element> elements;
  absl::Status status;
};
inline ReadOut ReadAll(Iterator& it) {
  ReadOut out;
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<std::optional<Element>> next = it.GetNext();
    if (!next.ok()) {
      out.status = next.status();
      break;
    }
    if (!next->has_value()) break;
    out.elements.push_back(**std::move(next));
  }
  return out;
}

// The reader ended without an error after exactly `expected`, component by component.
inline void CheckReadExactly(const ReadOut& got, const std::vector<Element>& expected) {
  Check(got.status.ok() && got.elements.size() == expected.size());
  for (size_t i = 0; i < got.elements.size(); ++i) {
    Check(got.elements[i].size() == expected[i].size());
    for (size_t j = 0; j < got.elements[i].size(); ++j) {
      Check(got.elements[i][j].Equals(expected[i][j]));
    }
  }
}

}  // namespace sluice::fuzz

#endif  // SLUICE_TESTS_FUZZ_SAVED_ELEMENTS_H_
