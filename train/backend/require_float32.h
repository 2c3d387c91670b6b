#ifndef SLUICE_TRAIN_BACKEND_REQUIRE_FLOAT32_H_
#define SLUICE_TRAIN_BACKEND_REQUIRE_FLOAT32_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::backend {

// InvalidArgument unless `t` is float32; `op` names the caller in the message.
// Every kernel is float32 (see backend.h), so ops and backends check alike.
absl::Status RequireFloat32(const Tensor& t, absl::string_view op, absl::string_view what);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_REQUIRE_FLOAT32_H_
