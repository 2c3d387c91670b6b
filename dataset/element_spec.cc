#include "dataset/element_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

ElementSpec ElementSpec::FromElement(const Element& element) {
  std::vector<TensorSpec> components;
  components.reserve(element.size());
  for (const Tensor& t : element) components.push_back(TensorSpec::FromTensor(t));
  return ElementSpec(std::move(components));
}

ElementSpec ElementSpec::Zipped(absl::Span<const ElementSpec> parts) {
  std::vector<TensorSpec> components;
  for (const ElementSpec& part : parts) {
    if (!part.known()) return ElementSpec();
    components.insert(components.end(), part.components().begin(), part.components().end());
  }
  return ElementSpec(std::move(components));
}

absl::Status ElementSpec::Check(const Element& element) const {
  if (!known_) return absl::OkStatus();
  if (element.size() != components_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the element has ", element.size(),
                                                   " components, expected ", components_.size()));
  }
  for (size_t k = 0; k < element.size(); ++k) {
    if (!components_[k].IsCompatibleWith(element[k])) {
      return absl::InvalidArgumentError(
          absl::StrCat("component ", k, " is ", TensorSpec::FromTensor(element[k]).DebugString(),
                       ", expected ", components_[k].DebugString()));
    }
  }
  return absl::OkStatus();
}

bool ElementSpec::IsCompatibleWith(const ElementSpec& other) const {
  if (!known_ || !other.known_) return true;
  if (components_.size() != other.components_.size()) return false;
  for (size_t k = 0; k < components_.size(); ++k) {
    if (!components_[k].IsCompatibleWith(other.components_[k])) return false;
  }
  return true;
}

ElementSpec ElementSpec::MostSpecificCompatibleSpec(const ElementSpec& other) const {
  if (!known_ || !other.known_ || components_.size() != other.components_.size()) {
    return ElementSpec();
  }
  std::vector<TensorSpec> components = components_;
  for (size_t k = 0; k < components.size(); ++k) {
    if (components[k].dtype != other.components_[k].dtype) return ElementSpec();
    components[k].shape =
        components[k].shape.MostSpecificCompatibleShape(other.components_[k].shape);
  }
  return ElementSpec(std::move(components));
}

ElementSpec ElementSpec::Batched(int64_t batch_dim) const {
  ElementSpec out = *this;
  for (TensorSpec& c : out.components_) c.shape.InsertDim(0, batch_dim);
  return out;
}

ElementSpec ElementSpec::Unbatched() const {
  ElementSpec out = *this;
  for (TensorSpec& c : out.components_) {
    if (c.shape.rank() == 0) return ElementSpec();
    c.shape.RemoveDim(0);
  }
  return out;
}

std::string ElementSpec::DebugString() const {
  if (!known_) return "<unknown>";
  return absl::StrCat(
      "(",
      absl::StrJoin(components_, ", ",
                    [](std::string* out, const TensorSpec& c) { out->append(c.DebugString()); }),
      ")");
}

}  // namespace sluice
