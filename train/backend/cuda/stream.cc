#include "train/backend/cuda/stream.h"

#include <utility>

#include "train/backend/cuda/cuda_check.h"

namespace sluice::train::backend::cuda {

absl::StatusOr<Stream> Stream::Create(int device) {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream, device);
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

Stream::~Stream() {
  // Pending work still completes: cudaStreamDestroy does not wait for it but
  // releases the stream once it is done.
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status Stream::Synchronize() const {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status Stream::Wait(const Event& event) const {
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, event.get(), 0));
  return absl::OkStatus();
}

absl::StatusOr<Event> Event::Create(int device, bool timing) {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaEvent_t event = nullptr;
  CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(event);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

absl::Status Event::Record(const Stream& stream) {
  CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream.get()));
  return absl::OkStatus();
}

absl::Status Event::Synchronize() const {
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
  return absl::OkStatus();
}

absl::StatusOr<bool> Event::Done() const {
  const cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    cudaGetLastError();  // not an error: clear it
    return false;
  }
  CUDA_RETURN_IF_ERROR(err);
  return true;
}

absl::StatusOr<float> Event::MillisecondsSince(const Event& start) const {
  float ms = 0;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

}  // namespace sluice::train::backend::cuda
