#include "train/backend/plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/mutex.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "train/backend/backend.h"
#include "train/backend/broadcast.h"
#include "train/backend/compute_precision.h"
#include "train/backend/plugin_config.h"
#include "train/backend/require_float32.h"

// In the global scope only where the program exports its symbols, which a plugin needs
// (LoadPluginFile checks it first, to say so instead of failing on some undefined symbol).
// Declared extern first: a const at namespace scope is otherwise local to this file.
extern "C" {
extern const int sluice_plugin_host;
const int sluice_plugin_host = 1;
}

// One function of each file whose functions a plugin calls, referenced beside the loader: a
// program links a file of a static library only when it calls into it, so a program that can
// load a plugin (it links this file) holds them all, even where it calls none itself (the Python
// module calls no broadcast helper). A plugin needing a file not listed here fails to load with
// "undefined symbol" (tests: a plugin calling these, loaded by a test program and by Python).
// External and extern "C", so that no compiler drops it as unused.
extern "C" {
extern const void* const sluice_plugin_host_interface[];
const void* const sluice_plugin_host_interface[] = {
    // backend.cc: the registries, Backend's defaults
    reinterpret_cast<const void*>(
        static_cast<absl::StatusOr<sluice::train::backend::Backend*> (*)(const sluice::Device&)>(
            &sluice::train::backend::BackendFor)),
    reinterpret_cast<const void*>(&sluice::train::backend::BroadcastStrides),  // broadcast.cc
    reinterpret_cast<const void*>(
        &sluice::train::backend::CurrentPrecision),                          // compute_precision.cc
    reinterpret_cast<const void*>(&sluice::train::backend::RequireFloat32),  // require_float32.cc
    reinterpret_cast<const void*>(&sluice::profiler::RecordTrackSpan),  // core/trace_recorder.cc
};
}

namespace sluice::train::backend {
namespace {

// Whether `name` is in the global scope, which a plugin's undefined symbols bind to (dlsym on the
// program's own handle; RTLD_DEFAULT would search this caller's scope too, which holds the
// caller's object even when that object is not global).
bool InGlobalScope(const char* name) {
  void* program = dlopen(nullptr, RTLD_NOW);
  return program != nullptr && dlsym(program, name) != nullptr;
}

// Whether sluice's functions are in the global scope. An executable linked with -rdynamic puts
// them there. A shared object holding sluice (the Python module, which Python opens RTLD_LOCAL)
// shows them only to what it opened itself: it is opened again, RTLD_NOLOAD (the object already
// loaded) | RTLD_GLOBAL, which adds it to that scope.
bool HostExportsSluice() {
  if (InGlobalScope("sluice_plugin_host")) return true;
  Dl_info info;
  if (dladdr(&sluice_plugin_host, &info) == 0 || info.dli_fname == nullptr ||
      *info.dli_fname == '\0') {
    return false;
  }
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == nullptr) return false;
  return InGlobalScope("sluice_plugin_host");
}

// The folder of the shared object that holds this code when it is not the executable (the
// Python module's), or empty.
std::string HolderDir(const std::string& exe_dir) {
  Dl_info info;
  if (dladdr(&sluice_plugin_host, &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return "";
  const std::string holder(resolved);
  const size_t slash = holder.rfind('/');
  if (slash == std::string::npos) return "";
  const std::string dir = holder.substr(0, slash);
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0 && holder == std::string(exe, static_cast<size_t>(n))) return "";
  return dir == exe_dir ? "" : dir;
}

struct PluginInfo {
  const char* file;         // libsluice_cuda.so
  const char* environment;  // SLUICE_CUDA_PLUGIN
  const char* what;         // "CUDA", for messages
  bool built;
};

const PluginInfo* InfoOf(DeviceType type) {
  static constexpr PluginInfo kCuda = {"libsluice_cuda.so", "SLUICE_CUDA_PLUGIN", "CUDA",
                                       SLUICE_CUDA_PLUGIN_BUILT != 0};
  return type == DeviceType::kCuda ? &kCuda : nullptr;
}

// The executable's folder, or empty when /proc is not mounted.
std::string ExecutableDir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  const std::string exe(path, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

// dlerror's text names the file that failed: the plugin itself ("<path>: undefined symbol ...")
// or a library it needs ("libcudnn.so.9: cannot open ..."); the plugin's path leads either way.
std::string DlopenError(const std::string& path) {
  const char* error = dlerror();
  const std::string text = error != nullptr ? error : "dlopen failed";
  return absl::StartsWith(text, path + ":") ? text : absl::StrCat(path, ": ", text);
}

// Opens, checks and registers the plugin at `path`; its handle.
absl::StatusOr<void*> OpenPlugin(const std::string& path) {
  if (!HostExportsSluice()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        ": this program does not export sluice's functions, which the plugin calls: link it with "
        "-rdynamic (CMake: executables that link sluice::train_backend get it)"));
  }
  dlerror();  // clear
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::FailedPreconditionError(DlopenError(path));
  auto* abi = reinterpret_cast<const char* (*)()>(dlsym(handle, kPluginAbiSymbol));
  auto* register_plugin = reinterpret_cast<void (*)()>(dlsym(handle, kPluginRegisterSymbol));
  if (abi == nullptr || register_plugin == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a sluice plugin (it exports no ",
                                                      kPluginAbiSymbol, " and ",
                                                      kPluginRegisterSymbol, ")"));
  }
  if (std::strcmp(abi(), SLUICE_PLUGIN_ABI) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": built for sluice ", abi(), ", but this program is sluice ",
                     SLUICE_PLUGIN_ABI, ": use the plugin built with this program"));
  }
  register_plugin();
  return handle;
}

// Finds `type`'s plugin along PluginSearchPath and opens it.
absl::StatusOr<void*> FindAndOpen(DeviceType type) {
  const PluginInfo* info = InfoOf(type);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no plugin serves ", Device{type, 0}.DebugString(), "'s device type"));
  }
  if (!info->built) {
    return absl::FailedPreconditionError(
        absl::StrCat("sluice was built without ", info->what,
                     " (configure with -DSLUICE_CUDA=ON on a machine with nvcc)"));
  }
  const std::vector<std::string> places = PluginSearchPath(type);
  for (const std::string& place : places) {
    const bool is_path = place.find('/') != std::string::npos;
    if (is_path && access(place.c_str(), F_OK) != 0) continue;
    absl::StatusOr<void*> handle = OpenPlugin(place);
    // The bare name's own "cannot open" means "not found anywhere"; anything else is the error.
    if (!is_path && !handle.ok() &&
        absl::StartsWith(handle.status().message(), place + ": cannot open")) {
      break;
    }
    if (!handle.ok()) {
      return WithContext(handle.status(),
                         absl::StrCat("sluice's ", info->what, " backend could not be loaded: "));
    }
    return handle;
  }
  return absl::NotFoundError(
      absl::StrCat("sluice's ", info->what, " backend ", info->file, " was not found: looked in ",
                   absl::StrJoin(places.begin(), places.end() - 1, ", "),
                   " and the dynamic linker's path (LD_LIBRARY_PATH, ld.so.cache); set ",
                   info->environment, " to its path"));
}

// LoadPlugin's results: one load per device type and process, the handle where it loaded.
struct LoadResults {
  Mutex mu;
  std::map<DeviceType, absl::StatusOr<void*>> results ABSL_GUARDED_BY(mu);
};

absl::StatusOr<void*> Load(DeviceType type) {
  static auto* loaded = new LoadResults;  // never destroyed: plugins are never unloaded
  MutexLock lock(&loaded->mu);
  auto it = loaded->results.find(type);
  if (it == loaded->results.end()) it = loaded->results.emplace(type, FindAndOpen(type)).first;
  return it->second;
}

}  // namespace

bool PluginBuilt(DeviceType type) {
  const PluginInfo* info = InfoOf(type);
  return info != nullptr && info->built;
}

std::vector<std::string> PluginSearchPath(DeviceType type) {
  const PluginInfo* info = InfoOf(type);
  if (info == nullptr) return {};
  const char* chosen = std::getenv(info->environment);
  if (chosen != nullptr && *chosen != '\0') return {chosen};
  std::vector<std::string> places;
  const std::string exe_dir = ExecutableDir();
  if (!exe_dir.empty()) {
    places.push_back(absl::StrCat(exe_dir, "/", info->file));
    places.push_back(absl::StrCat(exe_dir, "/../lib/", info->file));
  }
  const std::string holder_dir = HolderDir(exe_dir);
  if (!holder_dir.empty()) places.push_back(absl::StrCat(holder_dir, "/", info->file));
  places.push_back(absl::StrCat(SLUICE_INSTALL_FULL_LIBDIR, "/", info->file));
  places.push_back(info->file);
  return places;
}

absl::Status LoadPlugin(DeviceType type) { return Load(type).status(); }

absl::StatusOr<void*> PluginSymbol(DeviceType type, const char* symbol) {
  SLUICE_ASSIGN_OR_RETURN(void* handle, Load(type));
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("sluice's plugin for ", Device{type, 0}.DebugString(), " has no ", symbol));
  }
  return address;
}

absl::Status LoadPluginFile(const std::string& path) { return OpenPlugin(path).status(); }

}  // namespace sluice::train::backend
