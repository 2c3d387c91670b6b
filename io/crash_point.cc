#include "io/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice {
namespace {

struct Armed {
  std::string name;  // empty: disarmed
  long remaining = 0;
  int signal = SIGKILL;
};

const Armed& ArmedPoint() {
  static const Armed armed = [] {
    Armed a;
    const char* spec = std::getenv("SLUICE_CRASH_AT");
    if (spec == nullptr) return a;
    const char* colon = std::strrchr(spec, ':');
    if (colon == nullptr) return a;
    const long n = std::strtol(colon + 1, nullptr, 10);
    if (n < 1) return a;
    a.name.assign(spec, colon);
    a.remaining = n;
    const char* signal = std::getenv("SLUICE_CRASH_SIGNAL");
    if (signal != nullptr && std::strcmp(signal, "TERM") == 0) a.signal = SIGTERM;
    return a;
  }();
  return armed;
}

std::atomic<long> reached{0};

}  // namespace

void CrashPoint(const char* name) {
  const Armed& armed = ArmedPoint();
  if (armed.name.empty() || armed.name != name) return;
  if (reached.fetch_add(1, std::memory_order_relaxed) + 1 == armed.remaining) {
    ::kill(::getpid(), armed.signal);
  }
}

}  // namespace sluice
