#ifndef SLUICE_SLUICE_H_
#define SLUICE_SLUICE_H_

// Umbrella header: everything a user of the installed package needs.
#include "core/element.h"
#include "core/status_macros.h"
#include "core/tensor.h"

#endif  // SLUICE_SLUICE_H_
