#include "train/fit/training_checkpoint.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "io/atomic_file.h"
#include "io/checksummed_wire_reader.h"
#include "io/crc32c.h"
#include "io/deterministic_proto.h"
#include "io/input_stream.h"
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
  if (position.accumulated_steps > 0) {
    p->set_accumulated_steps(position.accumulated_steps);
    p->set_accumulation_steps(position.accumulation_steps);
    Element sums;
    for (const auto& [name, sum] : position.accumulated_gradients) {
      p->add_accumulated_names(name);
      sums.push_back(sum);
    }
    ElementToProto(sums, p->mutable_accumulated_gradients());
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
  if (p.accumulated_steps() == 0 && p.accumulated_names_size() == 0) return absl::OkStatus();
  if (p.accumulated_steps() < 1 || p.accumulated_steps() >= p.accumulation_steps()) {
    return absl::DataLossError(
        absl::StrCat(where, ": ", p.accumulated_steps(), " of ", p.accumulation_steps(),
                     " micro-batches accumulated: outside [1, ", p.accumulation_steps(), ")"));
  }
  absl::StatusOr<Element> sums = ElementFromProto(p.accumulated_gradients());
  if (!sums.ok()) {
    return absl::DataLossError(
        absl::StrCat(where, ": the accumulated gradients: ", sums.status().message()));
  }
  if (sums->size() != static_cast<size_t>(p.accumulated_names_size())) {
    return absl::DataLossError(absl::StrCat(where, ": ", sums->size(),
                                            " accumulated gradients for ",
                                            p.accumulated_names_size(), " names"));
  }
  out.accumulated_steps = p.accumulated_steps();
  out.accumulation_steps = p.accumulation_steps();
  for (int i = 0; i < p.accumulated_names_size(); ++i) {
    Tensor& sum = (*sums)[static_cast<size_t>(i)];
    if (sum.dtype() != DType::kFloat32) {
      return absl::DataLossError(absl::StrCat(where, ": the accumulated gradient of ",
                                              p.accumulated_names(i), " is ",
                                              DTypeName(sum.dtype()), ", not float32"));
    }
    out.accumulated_gradients.emplace_back(p.accumulated_names(i), std::move(sum));
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
  if (checkpoint.loss_scale) {
    proto::LossScaleStateProto* scale = rest.mutable_loss_scale();
    scale->set_scale(checkpoint.loss_scale->scale);
    scale->set_finite_steps(checkpoint.loss_scale->finite_steps);
    scale->set_skipped_steps(checkpoint.loss_scale->skipped_steps);
  }
  payload.AddMessage(rest);

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

constexpr int kVersionField = 1;      // TrainingCheckpointProto.version
constexpr int kTensorNameField = 1;   // NamedTensorProto.name
constexpr int kTensorShapeField = 2;  // NamedTensorProto.shape

// Reads a checkpoint's payload field by field (ChecksummedWireReader), not as one protobuf
// message: protobuf parses at most 2 GiB, and it would hold every tensor twice (the file's
// bytes, then the parsed bytes fields) before the tensors were made, three copies in all. Here
// each tensor's bytes go from the file straight into the tensor; the other fields (small: the
// counters, the input position, the metrics) are gathered and parsed by protobuf.
class PayloadParser {
 public:
  PayloadParser(const std::string& path, ChecksummedWireReader& in) : path_(path), in_(in) {}

  absl::StatusOr<TrainingCheckpoint> Parse(uint64_t end) {
    TrainingCheckpoint ckpt;
    std::string rest;  // the fields besides the version, the variables and the optimizer
    // Protobuf keeps a scalar field's last value, and merges a message field met twice.
    int64_t version = 0;
    uint64_t version_at = end;
    while (in_.position() < end) {
      SLUICE_ASSIGN_OR_RETURN(const Key key, Wire(in_.ReadKey(end)));
      if (key.number == kVersionField && key.wire_type == Reader::kVarint) {
        version_at = in_.position();
        SLUICE_ASSIGN_OR_RETURN(const uint64_t v, Wire(in_.ReadVarint(end)));
        version = static_cast<int32_t>(v);  // an int32 field, as protobuf reads it
      } else if (key.number == kVariablesField && key.wire_type == Reader::kLengthDelimited) {
        SLUICE_ASSIGN_OR_RETURN(const uint64_t length, Wire(in_.ReadLength(end)));
        SLUICE_ASSIGN_OR_RETURN(auto variable, ReadTensor(in_.position() + length));
        ckpt.variables.push_back(std::move(variable));
      } else if (key.number == kOptimizerField && key.wire_type == Reader::kLengthDelimited) {
        SLUICE_ASSIGN_OR_RETURN(const uint64_t length, Wire(in_.ReadLength(end)));
        SLUICE_RETURN_IF_ERROR(ReadOptimizer(in_.position() + length, ckpt.optimizer.slots));
      } else {
        SLUICE_RETURN_IF_ERROR(Wire(in_.CopyValue(key, end, &rest)));
      }
    }
    if (version != kCheckpointVersion) {
      return absl::DataLossError(absl::StrCat(path_, ": at offset ", version_at,
                                              ": expected checkpoint version ", kCheckpointVersion,
                                              ", found ", version));
    }
    proto::OptimizerStateProto optimizer;
    SLUICE_RETURN_IF_ERROR(ParseGathered(optimizer_rest_, optimizer));
    ckpt.optimizer.iterations = optimizer.iterations();
    ckpt.optimizer.learning_rate = optimizer.learning_rate();
    for (const proto::NamedScalarProto& s : optimizer.scalars()) {
      ckpt.optimizer.scalars.emplace_back(s.name(), s.value());
    }
    proto::TrainingCheckpointProto p;
    SLUICE_RETURN_IF_ERROR(ParseGathered(rest, p));
    ckpt.frozen_variables.assign(p.frozen_variables().begin(), p.frozen_variables().end());
    ckpt.weights_only = p.weights_only();
    ckpt.epoch = p.epoch();
    ckpt.step_in_epoch = p.step_in_epoch();
    ckpt.global_step = p.global_step();
    if (p.has_loss_scale()) {
      ckpt.loss_scale =
          optimizers::DynamicLossScale::State{.scale = p.loss_scale().scale(),
                                              .finite_steps = p.loss_scale().finite_steps(),
                                              .skipped_steps = p.loss_scale().skipped_steps()};
    }
    SLUICE_RETURN_IF_ERROR(PositionFromProto(p, path_, ckpt));
    for (const proto::RankPositionProto& r : p.ranks()) {
      SLUICE_RETURN_IF_ERROR(PositionFromProto(r, absl::StrCat(path_, ": rank ", ckpt.ranks.size()),
                                               ckpt.ranks.emplace_back()));
    }
    return ckpt;
  }

 private:
  using Reader = ChecksummedWireReader;
  using Key = Reader::Key;

  // The reader's errors, with the file's name.
  absl::Status Wire(absl::Status s) const {
    if (s.ok() || absl::StartsWith(s.message(), path_)) return s;  // the stream's own errors
    return WithContext(s, absl::StrCat(path_, ": "));
  }
  template <typename T>
  absl::StatusOr<T> Wire(absl::StatusOr<T> v) const {
    if (v.ok()) return v;
    return Wire(v.status());
  }

  // Parses fields gathered by CopyValue as protobuf's message `P`.
  template <typename P>
  absl::Status ParseGathered(const std::string& bytes, P& p) const {
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::DataLossError(absl::StrCat(path_, ": expected a ", p.GetTypeName(),
                                              ", cannot parse its fields besides the tensors"));
    }
    return absl::OkStatus();
  }

  // An OptimizerStateProto's slots into `slots`; its other fields are gathered for Parse, which
  // parses those of every occurrence as one message, as protobuf merges them.
  absl::Status ReadOptimizer(uint64_t end, std::vector<std::pair<std::string, Tensor>>& slots) {
    while (in_.position() < end) {
      SLUICE_ASSIGN_OR_RETURN(const Key key, Wire(in_.ReadKey(end)));
      if (key.number == kSlotsField && key.wire_type == Reader::kLengthDelimited) {
        SLUICE_ASSIGN_OR_RETURN(const uint64_t length, Wire(in_.ReadLength(end)));
        SLUICE_ASSIGN_OR_RETURN(auto slot, ReadTensor(in_.position() + length));
        slots.push_back(std::move(slot));
      } else {
        SLUICE_RETURN_IF_ERROR(Wire(in_.CopyValue(key, end, &optimizer_rest_)));
      }
    }
    return absl::OkStatus();
  }

  // A NamedTensorProto ending at `end`, its data read straight into the tensor.
  absl::StatusOr<std::pair<std::string, Tensor>> ReadTensor(uint64_t end) {
    const uint64_t at = in_.position();
    // A few bytes of file must not cost much more memory: no model has this many tensors, and
    // no tensor this many dimensions.
    if (++tensors_ > kMaxTensors) {
      return absl::DataLossError(
          absl::StrCat(path_, ": at offset ", at, ": more than ", kMaxTensors, " tensors"));
    }
    std::string name;
    std::vector<int64_t> dims;
    std::optional<Tensor> data;  // flat, until the shape is known
    uint64_t data_bytes = 0;
    while (in_.position() < end) {
      SLUICE_ASSIGN_OR_RETURN(const Key key, Wire(in_.ReadKey(end)));
      if (key.number == kTensorNameField && key.wire_type == Reader::kLengthDelimited) {
        SLUICE_ASSIGN_OR_RETURN(const uint64_t length, Wire(in_.ReadLength(end)));
        SLUICE_ASSIGN_OR_RETURN(name, Wire(in_.ReadString(length, end)));
      } else if (key.number == kTensorShapeField && key.wire_type == Reader::kVarint) {
        SLUICE_ASSIGN_OR_RETURN(const uint64_t d, Wire(in_.ReadVarint(end)));
        SLUICE_RETURN_IF_ERROR(AddDim(d, name, dims));
      } else if (key.number == kTensorShapeField && key.wire_type == Reader::kLengthDelimited) {
        SLUICE_ASSIGN_OR_RETURN(const uint64_t length, Wire(in_.ReadLength(end)));
        const uint64_t packed_end = in_.position() + length;  // packed, as proto3 writes it
        while (in_.position() < packed_end) {
          SLUICE_ASSIGN_OR_RETURN(const uint64_t d, Wire(in_.ReadVarint(packed_end)));
          SLUICE_RETURN_IF_ERROR(AddDim(d, name, dims));
        }
      } else if (key.number == kTensorDataField && key.wire_type == Reader::kLengthDelimited) {
        SLUICE_ASSIGN_OR_RETURN(data_bytes, Wire(in_.ReadLength(end)));
        data.reset();
        if (data_bytes % sizeof(float) != 0) {
          // Not float32 data: reported below with the shape it should have matched.
          SLUICE_RETURN_IF_ERROR(Wire(in_.Skip(data_bytes, end)));
        } else if (data_bytes > 0) {
          data.emplace(DType::kFloat32, Shape({static_cast<int64_t>(data_bytes / sizeof(float))}));
          SLUICE_RETURN_IF_ERROR(
              Wire(in_.Read(static_cast<char*>(data->raw_data()), data_bytes, end)));
        }
      } else {
        SLUICE_RETURN_IF_ERROR(Wire(in_.CopyValue(key, end, nullptr)));
      }
    }
    const absl::StatusOr<Shape> checked = Shape::FromUntrustedDims(dims);
    if (!checked.ok()) {
      return absl::DataLossError(
          absl::StrCat(path_, ": tensor '", name, "': ", checked.status().message()));
    }
    const uint64_t expected = static_cast<uint64_t>(checked->num_elements()) * sizeof(float);
    if (data_bytes != expected) {
      return absl::DataLossError(absl::StrCat(path_, ": tensor '", name, "' of shape ",
                                              checked->DebugString(), " expects ", expected,
                                              " bytes of float32 data, found ", data_bytes));
    }
    if (expected == 0) return std::make_pair(std::move(name), Tensor(DType::kFloat32, *checked));
    SLUICE_ASSIGN_OR_RETURN(Tensor t, data->Reshape(*checked));
    return std::make_pair(std::move(name), std::move(t));
  }

  absl::Status AddDim(uint64_t d, const std::string& name, std::vector<int64_t>& dims) const {
    if (dims.size() >= kMaxRank) {
      return absl::DataLossError(absl::StrCat(path_, ": at offset ", in_.position(), ": tensor '",
                                              name, "' has more than ", kMaxRank, " dimensions"));
    }
    dims.push_back(static_cast<int64_t>(d));
    return absl::OkStatus();
  }

  static constexpr size_t kMaxRank = 64;
  static constexpr int64_t kMaxTensors = int64_t{1} << 24;

  const std::string& path_;
  Reader& in_;
  std::string optimizer_rest_;  // the optimizer's fields besides its slots
  int64_t tensors_ = 0;
};

}  // namespace

absl::StatusOr<TrainingCheckpoint> ReadCheckpoint(const std::string& path) {
  // A FIFO would block the open, and a /proc file says it has no bytes.
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!error && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> file, FileInputStream::Open(path));
  SLUICE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  return ReadCheckpoint(std::move(file), size, path);
}

namespace {

// A message of this file's without its "path: at offset N: " opening.
absl::string_view WithoutPrefix(absl::string_view message, absl::string_view path) {
  if (absl::ConsumePrefix(&message, path)) absl::ConsumePrefix(&message, ": ");
  if (absl::ConsumePrefix(&message, "at offset ")) {
    const size_t colon = message.find(": ");
    if (colon != absl::string_view::npos) message.remove_prefix(colon + 2);
  }
  return message;
}

}  // namespace

absl::StatusOr<TrainingCheckpoint> ReadCheckpoint(std::unique_ptr<InputStream> source,
                                                  uint64_t size, const std::string& path) {
  BufferedInputStream in(std::move(source), 64 << 10);
  // The header: magic, payload length, masked CRC.
  SLUICE_ASSIGN_OR_RETURN(const size_t have, in.Ensure(kHeaderSize));
  const absl::string_view head(in.data(), have);
  if (head.size() < kMagic.size() || head.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError(absl::StrCat(path, ": at offset 0: expected the checkpoint magic \"",
                                            absl::string_view(kMagic).substr(0, kMagic.size() - 1),
                                            "\\n\"; not a sluice checkpoint"));
  }
  if (head.size() < kHeaderSize || size < kHeaderSize) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: expected a ", kHeaderSize,
                                            "-byte header, the file has ",
                                            std::min<uint64_t>(head.size(), size), " bytes"));
  }
  const uint64_t length = tfrecord::DecodeFixed64(head.data() + kMagic.size());
  const uint32_t stored_crc = tfrecord::DecodeFixed32(head.data() + kMagic.size() + 8);
  in.Consume(kHeaderSize);
  if (size - kHeaderSize != length) {
    return absl::DataLossError(absl::StrCat(path, ": at offset ", kHeaderSize, ": expected ",
                                            length, " bytes of payload, found ", size - kHeaderSize,
                                            " (truncated or extended)"));
  }
  ChecksummedWireReader reader(in);
  absl::StatusOr<TrainingCheckpoint> ckpt = PayloadParser(path, reader).Parse(size);
  // A payload that does not parse is most likely corrupt: the checksum says which, so the rest
  // is read for it.
  const uint64_t stopped = reader.position();
  if (!ckpt.ok() && stopped <= size) (void)reader.Skip(size - stopped, size);
  const uint32_t crc = MaskCrc32c(reader.crc());
  if (reader.position() == size && crc != stored_crc) {
    return absl::DataLossError(
        absl::StrCat(path, ": at offset ", kHeaderSize, ": payload checksum mismatch (stored ",
                     stored_crc, ", computed ", crc, "): the file is corrupt",
                     ckpt.ok() ? ""
                               : absl::StrCat(" (reading stopped at offset ", stopped, ": ",
                                              WithoutPrefix(ckpt.status().message(), path), ")")));
  }
  return ckpt;
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
