#include "train/fit/training_checkpoint.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/deterministic_proto.h"
#include "io/tfrecord_format.h"
#include "train/proto/checkpoint.pb.h"

namespace sluice::train::fit {
namespace {

// magic | uint64 payload length | uint32 masked CRC-32C of the payload | payload.
constexpr absl::string_view kMagic = "sluice-checkpoint-1\n";
constexpr size_t kHeaderSize = kMagic.size() + 8 + 4;
constexpr int kCheckpointVersion = 1;

// Field numbers of checkpoint.proto that the payload writes by hand.
constexpr int kVariablesField = 2;   // TrainingCheckpointProto.variables
constexpr int kOptimizerField = 3;   // TrainingCheckpointProto.optimizer
constexpr int kSlotsField = 3;       // OptimizerStateProto.slots
constexpr int kTensorDataField = 3;  // NamedTensorProto.data

// A serialized TrainingCheckpointProto as a list of pieces, the tensors' bytes referenced where
// they are: a checkpoint is written without copying its tensors again (the proto's bytes field,
// the serialized string and the file's string were three copies of every variable and slot,
// page faults and all: 0.8 s for the 40 MB of the cnn model with Adam on a VM).
class CheckpointPayload {
 public:
  // Appends `message`'s serialization (only its set fields).
  void AddMessage(const google::protobuf::MessageLite& message) {
    Add(Own(SerializeDeterministically(message)));
  }
  // Appends a NamedTensorProto as field `field` of the message being written.
  absl::Status AddTensor(int field, const std::string& name, const Tensor& t) {
    if (t.dtype() != DType::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint: tensor '", name, "' is ", DTypeName(t.dtype()), ", only float32 is saved"));
    }
    if (!t.device().is_cpu()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint: tensor '", name, "' is on ", t.device().DebugString(),
                       ": copy it to the host first (backend::ToHost)"));
    }
    const size_t start = BeginMessage(field);
    proto::NamedTensorProto head;
    head.set_name(name);
    for (int i = 0; i < t.rank(); ++i) head.add_shape(t.dim(i));
    AddMessage(head);
    const size_t bytes = static_cast<size_t>(t.num_elements()) * sizeof(float);
    if (bytes > 0) {  // proto3 leaves an empty bytes field out
      Add(Own(LengthDelimitedTag(kTensorDataField, bytes)));
      Add(absl::string_view(static_cast<const char*>(t.raw_data()), bytes));
    }
    EndMessage(start);
    return absl::OkStatus();
  }
  // A length-delimited field whose length EndMessage(returned value) fills in.
  size_t BeginMessage(int field) {
    pieces_.emplace_back();  // the tag and length, once known
    starts_.push_back(size_);
    fields_.push_back(field);
    return pieces_.size() - 1;
  }
  void EndMessage(size_t piece) {
    const size_t index = starts_.size() - 1;
    const size_t length = size_ - starts_[index];
    const std::string& tag = Own(LengthDelimitedTag(fields_[index], length));
    pieces_[piece] = tag;
    size_ += tag.size();
    starts_.pop_back();
    fields_.pop_back();
  }

  const std::vector<absl::string_view>& pieces() const { return pieces_; }
  uint64_t size() const { return size_; }
  uint32_t Crc32c() const {
    uint32_t crc = 0;
    for (const absl::string_view piece : pieces_) crc = Crc32cExtend(crc, piece);
    return crc;
  }

 private:
  static std::string LengthDelimitedTag(int field, size_t length) {
    std::string out;
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
        field, google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    coded.WriteVarint64(length);
    coded.Trim();
    return out;
  }
  const std::string& Own(std::string bytes) { return owned_.emplace_back(std::move(bytes)); }
  void Add(absl::string_view piece) {
    pieces_.push_back(piece);
    size_ += piece.size();
  }

  std::deque<std::string> owned_;  // a deque: its strings never move
  std::vector<absl::string_view> pieces_;
  std::vector<size_t> starts_;  // the open messages' starting sizes
  std::vector<int> fields_;     // and field numbers
  uint64_t size_ = 0;
};

absl::StatusOr<Tensor> FromProto(const proto::NamedTensorProto& p, absl::string_view where) {
  const absl::StatusOr<Shape> checked = Shape::FromUntrustedDims(p.shape());
  if (!checked.ok()) {
    return absl::DataLossError(
        absl::StrCat(where, ": tensor '", p.name(), "': ", checked.status().message()));
  }
  const Shape& shape = *checked;
  const size_t expected = static_cast<size_t>(shape.num_elements()) * sizeof(float);
  if (p.data().size() != expected) {
    return absl::DataLossError(absl::StrCat(where, ": tensor '", p.name(), "' of shape ",
                                            shape.DebugString(), " expects ", expected,
                                            " bytes of float32 data, found ", p.data().size()));
  }
  Tensor t(DType::kFloat32, shape);
  if (expected > 0) std::memcpy(t.raw_data(), p.data().data(), expected);
  return t;
}

// The position fields, which TrainingCheckpointProto and RankPositionProto share.
template <typename P>
void PositionToProto(const RankPosition& position, P* p) {
  if (position.iterator_state) {
    p->set_has_iterator_state(true);
    p->set_iterator_state(*position.iterator_state);
  }
  if (position.pending_element) {
    ElementToProto(*position.pending_element, p->mutable_pending_element());
  }
  for (const MetricState& m : position.metrics) {
    proto::MetricStateProto* mp = p->add_metrics();
    mp->set_name(m.name);
    mp->set_total(m.total);
    mp->set_count(m.count);
  }
}

template <typename P>
absl::Status PositionFromProto(const P& p, absl::string_view where, RankPosition& out) {
  if (p.has_iterator_state()) out.iterator_state = p.iterator_state();
  if (p.has_pending_element()) {
    absl::StatusOr<Element> e = ElementFromProto(p.pending_element());
    if (!e.ok()) {
      return absl::DataLossError(
          absl::StrCat(where, ": the pending input element: ", e.status().message()));
    }
    out.pending_element = *std::move(e);
  }
  for (const proto::MetricStateProto& m : p.metrics()) {
    out.metrics.push_back({m.name(), m.total(), m.count()});
  }
  return absl::OkStatus();
}

}  // namespace

std::string SerializeRankPosition(const RankPosition& position) {
  proto::RankPositionProto p;
  PositionToProto(position, &p);
  return p.SerializeAsString();
}

absl::StatusOr<RankPosition> ParseRankPosition(absl::string_view bytes, absl::string_view where) {
  proto::RankPositionProto p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(where, ": cannot parse a rank's input position"));
  }
  RankPosition out;
  SLUICE_RETURN_IF_ERROR(PositionFromProto(p, where, out));
  return out;
}

absl::Status WriteCheckpoint(const std::string& path, const TrainingCheckpoint& checkpoint) {
  CheckpointPayload payload;
  // Fields in number order, as protobuf writes them: the bytes are the proto's serialization.
  proto::TrainingCheckpointProto head;
  head.set_version(kCheckpointVersion);
  payload.AddMessage(head);
  for (const auto& [name, value] : checkpoint.variables) {
    SLUICE_RETURN_IF_ERROR(payload.AddTensor(kVariablesField, name, value));
  }
  {
    // Written always (set by mutable_optimizer() before): its length before its fields.
    const size_t start = payload.BeginMessage(kOptimizerField);
    proto::OptimizerStateProto scalars;
    scalars.set_iterations(checkpoint.optimizer.iterations);
    scalars.set_learning_rate(checkpoint.optimizer.learning_rate);
    payload.AddMessage(scalars);
    for (const auto& [name, value] : checkpoint.optimizer.slots) {
      SLUICE_RETURN_IF_ERROR(payload.AddTensor(kSlotsField, name, value));
    }
    scalars.Clear();
    for (const auto& [name, value] : checkpoint.optimizer.scalars) {
      proto::NamedScalarProto* scalar = scalars.add_scalars();
      scalar->set_name(name);
      scalar->set_value(value);
    }
    payload.AddMessage(scalars);
    payload.EndMessage(start);
  }
  proto::TrainingCheckpointProto rest;
  rest.set_epoch(checkpoint.epoch);
  rest.set_step_in_epoch(checkpoint.step_in_epoch);
  rest.set_global_step(checkpoint.global_step);
  PositionToProto(checkpoint, &rest);
  for (const RankPosition& r : checkpoint.ranks) PositionToProto(r, rest.add_ranks());
  for (const std::string& name : checkpoint.frozen_variables) rest.add_frozen_variables(name);
  rest.set_weights_only(checkpoint.weights_only);
  payload.AddMessage(rest);

  // ReadCheckpoint parses the payload as one message, which protobuf limits to 2 GiB: a larger
  // file could be written but never read back.
  if (payload.size() > static_cast<uint64_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": the checkpoint would be ", payload.size(),
        " bytes, over the 2 GiB that protobuf parses; checkpoints of models this large are not "
        "supported (nothing was written)"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  char fixed[12];
  tfrecord::EncodeFixed64(fixed, payload.size());
  tfrecord::EncodeFixed32(fixed + 8, MaskCrc32c(payload.Crc32c()));
  SLUICE_RETURN_IF_ERROR(file->Append(kMagic));
  SLUICE_RETURN_IF_ERROR(file->Append(absl::string_view(fixed, sizeof(fixed))));
  for (const absl::string_view piece : payload.pieces()) {
    SLUICE_RETURN_IF_ERROR(file->Append(piece));
  }
  return file->Commit();
}

namespace {

// The file's bytes, in one read into a buffer of its size (as ImportOnnx reads a model; a
// stream's rdbuf() into a stringstream copied them twice more). A file that shrank meanwhile
// reads short, and CheckedPayload names what is missing.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    return absl::ErrnoToStatus(error.value(), absl::StrCat(path, ": cannot open the checkpoint"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot open the checkpoint"));
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// The payload of a checkpoint file's bytes, after checking its magic, length and CRC.
absl::StatusOr<absl::string_view> CheckedPayload(const std::string& path, absl::string_view file) {
  if (file.size() < kMagic.size() || file.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError(absl::StrCat(path, ": at offset 0: expected the checkpoint magic \"",
                                            absl::string_view(kMagic).substr(0, kMagic.size() - 1),
                                            "\\n\"; not a sluice checkpoint"));
  }
  if (file.size() < kHeaderSize) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: expected a ", kHeaderSize,
                                            "-byte header, the file has ", file.size(), " bytes"));
  }
  const uint64_t length = tfrecord::DecodeFixed64(file.data() + kMagic.size());
  const uint32_t stored_crc = tfrecord::DecodeFixed32(file.data() + kMagic.size() + 8);
  if (file.size() - kHeaderSize != length) {
    return absl::DataLossError(absl::StrCat(path, ": at offset ", kHeaderSize, ": expected ",
                                            length, " bytes of payload, found ",
                                            file.size() - kHeaderSize, " (truncated or extended)"));
  }
  const absl::string_view payload = file.substr(kHeaderSize);
  const uint32_t crc = MaskCrc32c(Crc32c(payload));
  if (crc != stored_crc) {
    return absl::DataLossError(absl::StrCat(path, ": at offset ", kHeaderSize,
                                            ": payload checksum mismatch (stored ", stored_crc,
                                            ", computed ", crc, "): the file is corrupt"));
  }
  return payload;
}

absl::StatusOr<TrainingCheckpoint> CheckpointFromProto(const proto::TrainingCheckpointProto& p,
                                                       const std::string& path) {
  TrainingCheckpoint ckpt;
  for (const proto::NamedTensorProto& v : p.variables()) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, FromProto(v, path));
    ckpt.variables.emplace_back(v.name(), std::move(t));
  }
  ckpt.optimizer.iterations = p.optimizer().iterations();
  ckpt.optimizer.learning_rate = p.optimizer().learning_rate();
  for (const proto::NamedTensorProto& s : p.optimizer().slots()) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, FromProto(s, path));
    ckpt.optimizer.slots.emplace_back(s.name(), std::move(t));
  }
  for (const proto::NamedScalarProto& s : p.optimizer().scalars()) {
    ckpt.optimizer.scalars.emplace_back(s.name(), s.value());
  }
  ckpt.frozen_variables.assign(p.frozen_variables().begin(), p.frozen_variables().end());
  ckpt.weights_only = p.weights_only();
  ckpt.epoch = p.epoch();
  ckpt.step_in_epoch = p.step_in_epoch();
  ckpt.global_step = p.global_step();
  SLUICE_RETURN_IF_ERROR(PositionFromProto(p, path, ckpt));
  for (const proto::RankPositionProto& r : p.ranks()) {
    SLUICE_RETURN_IF_ERROR(PositionFromProto(r, absl::StrCat(path, ": rank ", ckpt.ranks.size()),
                                             ckpt.ranks.emplace_back()));
  }
  return ckpt;
}

}  // namespace

absl::StatusOr<TrainingCheckpoint> ReadCheckpoint(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const std::string file, ReadWholeFile(path));
  SLUICE_ASSIGN_OR_RETURN(const absl::string_view payload, CheckedPayload(path, file));
  proto::TrainingCheckpointProto p;
  if (!p.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::DataLossError(absl::StrCat(path, ": at offset ", kHeaderSize,
                                            ": expected a TrainingCheckpointProto, cannot parse"));
  }
  if (p.version() != kCheckpointVersion) {
    return absl::DataLossError(absl::StrCat(path, ": expected checkpoint version ",
                                            kCheckpointVersion, ", found ", p.version()));
  }
  return CheckpointFromProto(p, path);
}

absl::Status CheckResumingRanks(const std::string& path, const TrainingCheckpoint& ckpt,
                                size_t ranks) {
  // The input positions belong to as many ranks as wrote them.
  const size_t saved = std::max<size_t>(1, ckpt.ranks.size());
  const bool has_position = ckpt.iterator_state.has_value() || !ckpt.ranks.empty();
  if (!has_position || saved == ranks) return absl::OkStatus();
  auto processes = [](size_t n) { return n == 1 ? " process" : " ranks"; };
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": written by a job of ", saved, processes(saved), ", resumed by ", ranks,
                   processes(ranks), ": each rank's input position is saved, so resume with ",
                   saved, processes(saved)));
}

}  // namespace sluice::train::fit
