// libsluice_cuda.so's entry points (train/backend/plugin.h): what the program that loads it checks,
// the registrations that make Device::Cuda(i) available, and NCCL's communicator for
// distributed::CreateDeviceCommunicator.

#include <memory>

#include "absl/status/statusor.h"
#include "distributed/device_communicator.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/plugin_config.h"
#ifdef SLUICE_HAVE_NCCL
#include "distributed/nccl/nccl_communicator.h"
#endif

extern "C" {

__attribute__((visibility("default"))) const char* sluice_plugin_abi() { return SLUICE_PLUGIN_ABI; }

__attribute__((visibility("default"))) void sluice_plugin_register() {
  sluice::train::backend::cuda::RegisterCudaBackend();
}

#ifdef SLUICE_HAVE_NCCL
__attribute__((visibility("default"))) void sluice_plugin_create_communicator(
    sluice::distributed::Communicator* bootstrap,
    const sluice::distributed::DeviceCommunicatorOptions* options,
    absl::StatusOr<std::unique_ptr<sluice::distributed::Communicator>>* result) {
  *result = sluice::distributed::NcclCommunicator::Create(*bootstrap, *options);
}
#endif

}  // extern "C"
