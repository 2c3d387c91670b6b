#include "core/trace_recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/container/node_hash_set.h"
#include "core/mutex.h"

namespace sluice::profiler {
namespace {

std::atomic<bool> active{false};
std::atomic<int64_t> generation{0};  // bumped by each Start
std::atomic<int64_t> start_ns{0};

// One thread's ring: written by its thread, read by Stop. The mutex is uncontended except
// while Stop copies.
struct ThreadBuffer {
  std::mutex mu;
  std::vector<TraceEvent> events;
  int64_t written = 0;  // events recorded in this profile; the ring keeps the last events.size()
  int64_t generation = -1;
  int64_t tid = 0;
  std::string name;
};

Mutex registry_mu;
std::vector<std::shared_ptr<ThreadBuffer>> buffers ABSL_GUARDED_BY(registry_mu);
std::atomic<int64_t> events_per_thread{1 << 16};  // set by BeginRecording

thread_local std::shared_ptr<ThreadBuffer> tls_buffer;

// Makes `b` ready for the current profile (empty, sized) on its first event in it. Call with
// b->mu held.
void ResetForThisProfile(ThreadBuffer* b, int64_t g) {
  if (b->generation == g) return;
  b->events.resize(static_cast<size_t>(events_per_thread.load(std::memory_order_relaxed)));
  b->written = 0;
  b->generation = g;
}

// This thread's buffer, made on its first event.
ThreadBuffer* BufferForThisThread() {
  ThreadBuffer* b = tls_buffer.get();
  if (b != nullptr) return b;
  tls_buffer = std::make_shared<ThreadBuffer>();
  b = tls_buffer.get();
  b->tid = static_cast<int64_t>(syscall(SYS_gettid));
  char name[64] = {0};
  if (b->tid == static_cast<int64_t>(getpid())) {
    b->name = "main";  // its system name is the program's, which every thread inherits
  } else if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0) {
    b->name = name;
  }
  MutexLock lock(&registry_mu);
  buffers.push_back(tls_buffer);
  return b;
}

// The buffer of the track named `track`, made on its first event. Tracks live as long as the
// process: the registry's count of them keeps BeginRecording from dropping them.
ThreadBuffer* BufferForTrack(const char* track) {
  static Mutex tracks_mu;
  static auto* tracks = new std::map<std::string, std::shared_ptr<ThreadBuffer>>;
  MutexLock lock(&tracks_mu);
  std::shared_ptr<ThreadBuffer>& b = (*tracks)[track];
  if (b == nullptr) {
    b = std::make_shared<ThreadBuffer>();
    b->tid = kFirstTrackTid + static_cast<int64_t>(tracks->size()) - 1;
    b->name = track;
    MutexLock registry_lock(&registry_mu);
    buffers.push_back(b);
  }
  return b.get();
}

void Append(ThreadBuffer* b, const TraceEvent& e) {
  const int64_t g = generation.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(b->mu);
  // A thread that read the generation just before a new profile began may take a track's buffer
  // after another thread wrote the new profile's first events to it: its event is dropped, where a
  // reset to its older generation would clear the new profile's events.
  if (g < b->generation) return;
  ResetForThisProfile(b, g);
  if (b->events.empty()) return;
  b->events[static_cast<size_t>(b->written % static_cast<int64_t>(b->events.size()))] = e;
  ++b->written;
}

// Flush hooks, called by EndRecording.
struct FlushHooks {
  Mutex mu;
  std::map<int, std::function<void()>> hooks ABSL_GUARDED_BY(mu);
  int next_id ABSL_GUARDED_BY(mu) = 0;
};
FlushHooks& GetFlushHooks() {
  static FlushHooks* h = new FlushHooks;  // never destroyed, as the sampler
  return *h;
}

// Counter sources and the sampling thread.
struct Sampler {
  Mutex mu;
  std::map<int, std::function<void(const CounterReporter&)>> sources ABSL_GUARDED_BY(mu);
  int next_id ABSL_GUARDED_BY(mu) = 0;
  std::thread thread;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop = false;
};
Sampler& GetSampler() {
  static Sampler* s = new Sampler;  // never destroyed: sources may unregister at exit
  return *s;
}

// Resident set size in bytes, from /proc/self/statm (pages).
double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void SampleOnce() {
  Sampler& s = GetSampler();
  const CounterReporter report = [](absl::string_view name, double value) {
    RecordCounter(Intern(name), value);
  };
  RecordCounter("rss_bytes", ResidentBytes());
  MutexLock lock(&s.mu);
  for (auto& [id, source] : s.sources) source(report);
}

void SamplerLoop(int64_t interval_ms) {
  Sampler& s = GetSampler();
  pthread_setname_np(pthread_self(), "profiler");
  std::unique_lock<std::mutex> lock(s.stop_mu);
  // BeginRecording took the first sample; one more every interval until stopped.
  while (
      !s.stop_cv.wait_for(lock, std::chrono::milliseconds(interval_ms), [&] { return s.stop; })) {
    lock.unlock();
    SampleOnce();
    lock.lock();
  }
}

}  // namespace

bool Active() { return active.load(std::memory_order_relaxed); }

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* Intern(absl::string_view name) {
  static Mutex mu;
  static auto* names = new absl::node_hash_set<std::string>;  // never freed: events point here
  MutexLock lock(&mu);
  // Counters are interned every sample: a name already there costs a lookup, not a string.
  auto it = names->find(name);
  if (it == names->end()) it = names->emplace(name).first;
  return it->c_str();
}

void RecordSpan(const char* category, const char* name, int64_t start, int64_t end) {
  if (!Active()) return;
  const int64_t origin = start_ns.load(std::memory_order_relaxed);
  Append(BufferForThisThread(), {category, name, start - origin, end - start, 0, false});
}

void RecordTrackSpan(const char* track, const char* category, const char* name, int64_t start,
                     int64_t end) {
  if (!Active()) return;
  const int64_t origin = start_ns.load(std::memory_order_relaxed);
  Append(BufferForTrack(track), {category, name, start - origin, end - start, 0, false});
}

void RecordCounter(const char* name, double value) {
  if (!Active()) return;
  Append(BufferForThisThread(),
         {"counter", name, NowNs() - start_ns.load(std::memory_order_relaxed), 0, value, true});
}

void BeginRecording(int64_t per_thread, int64_t counter_interval_ms) {
  {
    MutexLock lock(&registry_mu);
    events_per_thread.store(per_thread, std::memory_order_relaxed);
    // Buffers of threads that have exited since the last recording go.
    std::erase_if(buffers,
                  [](const std::shared_ptr<ThreadBuffer>& b) { return b.use_count() == 1; });
    start_ns.store(NowNs(), std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
    active.store(true, std::memory_order_release);
  }
  if (counter_interval_ms > 0) {
    // The first sample here, not on the sampler thread: a recording stopped before that thread
    // ran (a short one on a loaded machine) still has every counter once.
    SampleOnce();
    Sampler& s = GetSampler();
    {
      std::lock_guard<std::mutex> lock(s.stop_mu);
      s.stop = false;
    }
    s.thread = std::thread(SamplerLoop, counter_interval_ms);
  }
}

std::vector<ThreadTrace> EndRecording(int64_t* dropped) {
  {
    FlushHooks& h = GetFlushHooks();
    MutexLock lock(&h.mu);
    for (auto& [id, hook] : h.hooks) hook();
  }
  Sampler& s = GetSampler();
  if (s.thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(s.stop_mu);
      s.stop = true;
    }
    s.stop_cv.notify_all();
    s.thread.join();
  }
  std::vector<ThreadTrace> threads;
  *dropped = 0;
  MutexLock lock(&registry_mu);
  active.store(false, std::memory_order_release);
  const int64_t g = generation.load(std::memory_order_acquire);
  for (const std::shared_ptr<ThreadBuffer>& b : buffers) {
    std::lock_guard<std::mutex> buffer_lock(b->mu);
    if (b->generation != g || b->written == 0) continue;
    ThreadTrace t{.tid = b->tid, .name = b->name};
    const int64_t cap = static_cast<int64_t>(b->events.size());
    const int64_t kept = std::min(b->written, cap);
    *dropped += b->written - kept;
    for (int64_t i = b->written - kept; i < b->written; ++i) {
      t.events.push_back(b->events[static_cast<size_t>(i % cap)]);
    }
    threads.push_back(std::move(t));
  }
  return threads;
}

int RegisterCounterSource(std::function<void(const CounterReporter&)> source) {
  Sampler& s = GetSampler();
  MutexLock lock(&s.mu);
  const int id = s.next_id++;
  s.sources.emplace(id, std::move(source));
  return id;
}

void UnregisterCounterSource(int id) {
  Sampler& s = GetSampler();
  MutexLock lock(&s.mu);
  s.sources.erase(id);
}

int RegisterFlushHook(std::function<void()> hook) {
  FlushHooks& h = GetFlushHooks();
  MutexLock lock(&h.mu);
  const int id = h.next_id++;
  h.hooks.emplace(id, std::move(hook));
  return id;
}

void UnregisterFlushHook(int id) {
  FlushHooks& h = GetFlushHooks();
  MutexLock lock(&h.mu);
  h.hooks.erase(id);
}

}  // namespace sluice::profiler
