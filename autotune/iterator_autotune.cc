// How iterators start AUTOTUNE: dataset/ cannot depend on autotune/, so
// Iterator makes its tuner through a factory that this file installs, and
// Iterator::AutotuneReport (which needs the report type) is defined here.
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "autotune/controller.h"
#include "dataset/iterator.h"

namespace sluice {
namespace {

std::unique_ptr<IteratorTuner> MakeAutotune(const Iterator& iterator) {
  return AutotuneController::Start(iterator);
}

}  // namespace

bool RegisterAutotuneWithIterators() {
  SetIteratorTunerFactory(&MakeAutotune);
  return true;
}

absl::StatusOr<AutotuneReport> Iterator::AutotuneReport() const {
  const auto* controller = dynamic_cast<const AutotuneController*>(tuner());
  if (controller == nullptr) {
    return absl::FailedPreconditionError(
        "AUTOTUNE is not running for this iterator: its pipeline has no kAutotune knob, "
        "Options::autotune is false, or its nodes are not made yet (GetNext or Initialize "
        "makes them)");
  }
  return controller->Report();
}

}  // namespace sluice
