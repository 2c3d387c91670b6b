#include "train/fit/training_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"
#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"
#include "train/proto/checkpoint.pb.h"

namespace sluice::train::fit {
namespace {

// magic | uint64 payload length | uint32 masked CRC-32C of the payload | payload.
constexpr absl::string_view kMagic = "sluice-checkpoint-1\n";
constexpr size_t kHeaderSize = kMagic.size() + 8 + 4;
constexpr int kCheckpointVersion = 1;

absl::Status ToProto(const std::string& name, const Tensor& t, proto::NamedTensorProto* out) {
  if (t.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint: tensor '", name, "' is ", DTypeName(t.dtype()), ", only float32 is saved"));
  }
  if (!t.device().is_cpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint: tensor '", name, "' is on ", t.device().DebugString(),
                     ": copy it to the host first (backend::ToHost)"));
  }
  out->set_name(name);
  for (int i = 0; i < t.rank(); ++i) out->add_shape(t.dim(i));
  out->set_data(static_cast<const char*>(t.raw_data()), t.num_elements() * sizeof(float));
  return absl::OkStatus();
}

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
  proto::TrainingCheckpointProto p;
  p.set_version(kCheckpointVersion);
  for (const auto& [name, value] : checkpoint.variables) {
    SLUICE_RETURN_IF_ERROR(ToProto(name, value, p.add_variables()));
  }
  proto::OptimizerStateProto* opt = p.mutable_optimizer();
  opt->set_iterations(checkpoint.optimizer.iterations);
  opt->set_learning_rate(checkpoint.optimizer.learning_rate);
  for (const auto& [name, value] : checkpoint.optimizer.slots) {
    SLUICE_RETURN_IF_ERROR(ToProto(name, value, opt->add_slots()));
  }
  for (const auto& [name, value] : checkpoint.optimizer.scalars) {
    proto::NamedScalarProto* scalar = opt->add_scalars();
    scalar->set_name(name);
    scalar->set_value(value);
  }
  p.set_epoch(checkpoint.epoch);
  p.set_step_in_epoch(checkpoint.step_in_epoch);
  p.set_global_step(checkpoint.global_step);
  PositionToProto(checkpoint, &p);
  for (const RankPosition& r : checkpoint.ranks) PositionToProto(r, p.add_ranks());
  for (const std::string& name : checkpoint.frozen_variables) p.add_frozen_variables(name);
  p.set_weights_only(checkpoint.weights_only);
  std::string payload;
  if (!p.SerializeToString(&payload)) {
    return absl::InternalError(absl::StrCat(path, ": cannot serialize the checkpoint"));
  }
  std::string file(kMagic);
  char fixed[12];
  tfrecord::EncodeFixed64(fixed, payload.size());
  tfrecord::EncodeFixed32(fixed + 8, MaskCrc32c(Crc32c(payload)));
  file.append(fixed, sizeof(fixed));
  file.append(payload);
  return WriteFileAtomically(path, file);
}

namespace {

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the checkpoint"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
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
