#include "train/dropout.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> Dropout(const Tensor& x, DropoutOptions options) {
  RETURN_IF_ERROR(RequireFloat32(x, "Dropout", "x"));
  if (!(options.rate >= 0.0f && options.rate < 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Dropout: rate must be in [0, 1), got ", options.rate));
  }
  // mt19937_64 is specified by the standard, and the uniform value is built
  // from its bits by hand (distributions differ between libraries), so a
  // seed drops the same elements everywhere.
  std::mt19937_64 rng(options.seed);
  const float scale = 1.0f / (1.0f - options.rate);
  Tensor mask(DType::kFloat32, x.shape());
  Tensor out(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float u = static_cast<float>(rng() >> 40) / static_cast<float>(1ull << 24);
    mask.data<float>()[i] = u >= options.rate ? scale : 0.0f;
    out.data<float>()[i] = x.data<float>()[i] * mask.data<float>()[i];
  }
  if (ShouldRecord({x})) {
    RecordOperation({x}, out,
                    [mask](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      Tensor gx(DType::kFloat32, g.shape());
                      for (int64_t i = 0; i < g.num_elements(); ++i) {
                        gx.data<float>()[i] = g.data<float>()[i] * mask.data<float>()[i];
                      }
                      return std::vector<std::optional<Tensor>>{gx};
                    });
  }
  return out;
}

}  // namespace sluice::train
