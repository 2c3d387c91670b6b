#ifndef SLUICE_TRAIN_BACKEND_PLUGIN_H_
#define SLUICE_TRAIN_BACKEND_PLUGIN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"

namespace sluice::train::backend {

// The backends of devices other than the CPU live in shared libraries of their own, plugins,
// loaded with dlopen the first time one of their devices is asked for (BackendFor, DeviceCount,
// distributed::CreateDeviceCommunicator), as PyTorch and ONNX Runtime load their execution
// providers. One build of `sluice` then starts on machines without CUDA, and pays for cuBLAS,
// cuDNN and NCCL (hundreds of MB mapped at start) only when it uses a GPU. The CUDA backend and
// the NCCL communicator are libsluice_cuda.so (train/backend/cuda/, distributed/nccl/).
//
// A plugin calls sluice's own functions in the program that loads it, and registers its backends
// in that program's registries: it is built from the same sources, by the same compiler, and does
// not link sluice's static libraries itself. So the program must export its symbols (executables
// that link sluice::train_backend are linked with -rdynamic; a shared object holding sluice, such
// as the Python module, makes its own global when it first loads a plugin), and every file the
// plugin calls into must be linked in (plugin.cc references one function of each, its host
// interface), and the plugin's ABI string (sluice's
// version, the compiler, the sanitizers) must equal the program's. A plugin calls only core/ and
// train/backend/ code, which every program that can load one has (its CPU backend uses the same),
// plus stateless helpers of the layers above, which it compiles in (distributed/communicator.cc).
//
// Where the plugin of a device type is looked for, in order (libsluice_cuda.so for CUDA):
//   1. $SLUICE_CUDA_PLUGIN, when set and not empty: that file only (a path, or a bare name for
//      the dynamic linker's search);
//   2. beside the executable (/proc/self/exe's folder): a build tree, or a bundle's folder;
//   3. ../lib from there: an installed prefix's bin/ and lib/, wherever it was moved;
//   4. beside the shared object that holds this code, when that is not the executable (the
//      Python module's folder, where the build tree links the plugin);
//   5. the library folder sluice was configured to install into (CMAKE_INSTALL_FULL_LIBDIR);
//   6. the dynamic linker's own search: LD_LIBRARY_PATH, the program's RUNPATH, ld.so.cache.
// The first file that exists is the one loaded: when it fails to load (a library it needs is
// missing, say), that failure is the error; later places are not tried.

// What a plugin exports, extern "C":
//   const char* sluice_plugin_abi(void);   its build's SLUICE_PLUGIN_ABI (plugin_config.h)
//   void sluice_plugin_register(void);     registers its backends (RegisterBackend, ...)
inline constexpr char kPluginAbiSymbol[] = "sluice_plugin_abi";
inline constexpr char kPluginRegisterSymbol[] = "sluice_plugin_register";

// Whether this build made the plugin of `type` (a CUDA build makes libsluice_cuda.so).
bool PluginBuilt(DeviceType type);

// The places above, for `type`'s plugin, in order; the last is the bare file name. Empty for a
// type that no plugin serves (the CPU, the guarded test device).
std::vector<std::string> PluginSearchPath(DeviceType type);

// Loads `type`'s plugin and lets it register, once per process: later calls return the first
// call's result. FailedPrecondition "sluice was built without CUDA" where the build made no
// plugin; NotFound naming the places looked in; FailedPrecondition with dlerror's text when the
// plugin or a library it needs does not load ("/opt/sluice/lib/libsluice_cuda.so:
// libcudnn.so.9: cannot open shared object file: No such file or directory").
absl::Status LoadPlugin(DeviceType type);

// The address of the extern "C" `symbol` in `type`'s plugin, loading it first (LoadPlugin's
// error when that fails; NotFound when the plugin has no such symbol). How code above the backend
// reaches what a plugin offers it without the plugin calling into that code:
// distributed::CreateDeviceCommunicator finds NCCL's communicator so.
absl::StatusOr<void*> PluginSymbol(DeviceType type, const char* symbol);

// Loads the plugin at `path` (for dlopen: a path, or a bare name), checks that it is one and that
// its ABI string is this program's, and calls its sluice_plugin_register. Never unloads it:
// registered factories point into it. LoadPlugin's last step; tests call it directly.
absl::Status LoadPluginFile(const std::string& path);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_PLUGIN_H_
