// Passive OpenMP waiting for every program that links the CPU backend: an entry of the
// executable's .preinit_array. It sits in a file of its own, which only executables link (the
// CMake interface of sluice_train_backend asks for sluice_passive_openmp_waiting with
// --undefined): a shared object such as the Python module cannot hold a .preinit_array entry,
// and must not re-execute its host program.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" {
// What executables' link asks for, pulling this file out of the static library.
extern const int sluice_passive_openmp_waiting;
const int sluice_passive_openmp_waiting = 1;
}

namespace sluice::train::backend::cpu {
namespace {

// oneDNN's OpenMP runtime (libgomp, which Debian's libdnnl links) reads OMP_WAIT_POLICY once,
// when it loads, and by default its idle workers spin between kernels, stealing the cores the
// input pipeline's threads need (on the 2-core VM the mlp trained 2-3x slower). No OpenMP call
// changes the policy later, and a setenv before libgomp loads does not last either (glibc's own
// initialisation resets the environment to the one the process started with). So every program
// that links the CPU backend runs itself again, once, with passive waiting, from the
// executable's .preinit_array, before any library has initialised or the program has done
// anything. A policy the user set is kept; under valgrind (which would not follow the exec) it
// goes on as it is.
void PassiveOpenMpWaiting(int, char** argv, char** envp) {
  // libc is not initialised yet: getenv and setenv do not see the environment, envp does.
  size_t n = 0;
  for (; envp[n] != nullptr; ++n) {
    if (std::strncmp(envp[n], "OMP_WAIT_POLICY=", 16) == 0) return;
    if (std::strncmp(envp[n], "LD_PRELOAD=", 11) == 0 && std::strstr(envp[n], "vgpreload")) {
      return;
    }
  }
  static char passive[] = "OMP_WAIT_POLICY=passive";
  char** env = static_cast<char**>(std::malloc((n + 2) * sizeof(char*)));
  if (env == nullptr) return;
  std::memcpy(env, envp, n * sizeof(char*));
  env[n] = passive;
  env[n + 1] = nullptr;
  execve("/proc/self/exe", argv, env);  // returns only on failure: then go on as we are
  std::free(env);
}
__attribute__((section(".preinit_array"),
               used)) void (*const passive_openmp_waiting)(int, char**,
                                                           char**) = &PassiveOpenMpWaiting;

}  // namespace
}  // namespace sluice::train::backend::cpu
