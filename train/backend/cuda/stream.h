#ifndef SLUICE_TRAIN_BACKEND_CUDA_STREAM_H_
#define SLUICE_TRAIN_BACKEND_CUDA_STREAM_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::train::backend::cuda {

class Event;

// An owned CUDA stream on one device, destroyed with the object. Made
// non-blocking: it does not synchronise with the legacy default stream.
class Stream {
 public:
  static absl::StatusOr<Stream> Create(int device);

  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  // Returns once everything queued on the stream has finished.
  absl::Status Synchronize() const;
  // Work queued on this stream from now on waits for `event`.
  absl::Status Wait(const Event& event) const;

 private:
  Stream(cudaStream_t stream, int device) : stream_(stream), device_(device) {}

  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

// An owned CUDA event: marks a point in a stream, to wait for or to time.
class Event {
 public:
  // `timing` events can measure elapsed time; others are cheaper to record.
  static absl::StatusOr<Event> Create(int device, bool timing = false);
  // No event (get() is null), until one is moved in.
  Event() = default;

  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  cudaEvent_t get() const { return event_; }
  absl::Status Record(const Stream& stream);
  absl::Status Synchronize() const;
  // Whether the work before the last Record has finished.
  absl::StatusOr<bool> Done() const;
  // Milliseconds from `start` to this event (both recorded, timing events).
  absl::StatusOr<float> MillisecondsSince(const Event& start) const;

 private:
  explicit Event(cudaEvent_t event) : event_(event) {}

  cudaEvent_t event_ = nullptr;
};

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_STREAM_H_
