#include "train/callbacks/summary_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"
#include "train/proto/event.pb.h"

namespace sluice::train::callbacks {
namespace {

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(std::string logdir,
                                                                     SummaryWriterOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("SummaryWriter: cannot create log directory ", logdir, ": ", ec.message()));
  }
  const double now = WallTime();
  const std::string path = absl::StrCat(logdir, "/events.out.tfevents.", static_cast<int64_t>(now),
                                        ".", HostName(), options.filename_suffix);
  // Append, as TensorFlow's writer does when the name is taken: records stay whole either way.
  std::FILE* file = std::fopen(path.c_str(), "ab");
  if (file == nullptr) {
    return absl::InternalError(
        absl::StrCat("SummaryWriter: cannot open ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<SummaryWriter> writer(new SummaryWriter(path, file, std::move(options)));
  proto::Event event;
  event.set_wall_time(now);
  event.set_file_version("brain.Event:2");
  SLUICE_RETURN_IF_ERROR(writer->WriteEvent(event.SerializeAsString()));
  SLUICE_RETURN_IF_ERROR(writer->Flush());  // TensorBoard lists the run as soon as the file exists
  return writer;
}

SummaryWriter::SummaryWriter(std::string path, std::FILE* file, SummaryWriterOptions options)
    : path_(std::move(path)), file_(file), options_(std::move(options)) {}

SummaryWriter::~SummaryWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status SummaryWriter::Fail(absl::Status status) {
  if (status_.ok()) status_ = status;
  return status_;
}

absl::Status SummaryWriter::WriteEvent(const std::string& serialized_event) {
  SLUICE_RETURN_IF_ERROR(status_);
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("SummaryWriter: ", path_, " is closed"));
  }
  char header[tfrecord::kHeaderSize];
  tfrecord::EncodeHeader(header, serialized_event.size());
  char footer[tfrecord::kFooterSize];
  tfrecord::EncodeFixed32(footer, MaskCrc32c(Crc32c(serialized_event)));
  if (std::fwrite(header, 1, sizeof(header), file_) != sizeof(header) ||
      std::fwrite(serialized_event.data(), 1, serialized_event.size(), file_) !=
          serialized_event.size() ||
      std::fwrite(footer, 1, sizeof(footer), file_) != sizeof(footer)) {
    return Fail(absl::InternalError(
        absl::StrCat("SummaryWriter: cannot write to ", path_, ": ", std::strerror(errno))));
  }
  return absl::OkStatus();
}

absl::Status SummaryWriter::Scalar(absl::string_view tag, float value, int64_t step) {
  proto::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  proto::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(std::string(tag));
  v->set_simple_value(value);
  SLUICE_RETURN_IF_ERROR(WriteEvent(event.SerializeAsString()));
  if (options_.flush_each) return Flush();
  return absl::OkStatus();
}

absl::Status SummaryWriter::Flush() {
  SLUICE_RETURN_IF_ERROR(status_);
  if (file_ != nullptr && std::fflush(file_) != 0) {
    return Fail(absl::InternalError(
        absl::StrCat("SummaryWriter: cannot flush ", path_, ": ", std::strerror(errno))));
  }
  return absl::OkStatus();
}

absl::Status SummaryWriter::Close() {
  if (file_ == nullptr) return status_;
  absl::Status flushed = Flush();
  const int rc = std::fclose(file_);
  file_ = nullptr;
  SLUICE_RETURN_IF_ERROR(flushed);
  if (rc != 0) {
    return Fail(absl::InternalError(
        absl::StrCat("SummaryWriter: cannot close ", path_, ": ", std::strerror(errno))));
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::callbacks
