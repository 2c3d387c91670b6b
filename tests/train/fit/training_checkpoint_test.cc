// Checkpoint files (train/checkpoint.h): round trip, corruption and mismatch errors.
#include "train/fit/training_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/crc32c.h"
#include "io/input_stream.h"
#include "io/tfrecord_format.h"
#include "tests/file_util.h"
#include "tests/train/gradient_check.h"
#include "tests/wire_encoding.h"
#include "train/proto/checkpoint.pb.h"

namespace sluice::train::fit {
namespace {

using ::sluice::testing::ReadFile;
using ::sluice::testing::Tag;
using ::sluice::testing::Varint;
using ::sluice::testing::WriteFile;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string CheckpointTempPath(const std::string& name) {
  return ::testing::TempDir() + "/checkpoint_test_" + name + "_" + std::to_string(getpid());
}

TrainingCheckpoint Sample() {
  TrainingCheckpoint c;
  c.variables = {{"0/dense/kernel", T({1, 2, 3, 4, 5, 6}, {2, 3})},
                 {"0/dense/bias", T({-1, 0.5f, 7}, {3})}};
  c.optimizer.iterations = 42;
  c.optimizer.learning_rate = 0.025f;
  c.optimizer.slots = {{"m/0", T({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {2, 3})},
                       {"v/1", T({9, 8, 7}, {3})}};
  c.optimizer.scalars = {{"u_product", 0.123456789012345678}};
  c.epoch = 3;
  c.step_in_epoch = 5;
  c.global_step = 29;
  c.iterator_state = std::string("\x01\x02iterator\x00state", 16);
  c.pending_element =
      Element{Tensor::Scalar<int64_t>(0), T({1, 2}, {1, 2}), Tensor::FromVector<int64_t>({1})};
  c.metrics = {{"loss", 12.5, 160}, {"accuracy", 150, 160}};
  return c;
}

TEST(CheckpointTest, RoundTripsEverything) {
  const std::string path = CheckpointTempPath("roundtrip");
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->variables.size(), 2u);
  EXPECT_EQ(c->variables[0].first, "0/dense/kernel");
  EXPECT_EQ(c->variables[0].second.shape(), Shape({2, 3}));
  EXPECT_THAT(Values(c->variables[0].second), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(c->variables[1].first, "0/dense/bias");
  EXPECT_THAT(Values(c->variables[1].second), ElementsAre(-1, 0.5f, 7));
  EXPECT_EQ(c->optimizer.iterations, 42);
  EXPECT_EQ(c->optimizer.learning_rate, 0.025f);
  ASSERT_EQ(c->optimizer.slots.size(), 2u);
  EXPECT_EQ(c->optimizer.slots[1].first, "v/1");
  EXPECT_THAT(Values(c->optimizer.slots[1].second), ElementsAre(9, 8, 7));
  ASSERT_EQ(c->optimizer.scalars.size(), 1u);
  EXPECT_EQ(c->optimizer.scalars[0].first, "u_product");
  EXPECT_EQ(c->optimizer.scalars[0].second, 0.123456789012345678);  // every bit of the double
  EXPECT_EQ(c->epoch, 3);
  EXPECT_EQ(c->step_in_epoch, 5);
  EXPECT_EQ(c->global_step, 29);
  ASSERT_TRUE(c->iterator_state.has_value());
  EXPECT_EQ(*c->iterator_state, std::string("\x01\x02iterator\x00state", 16));
  ASSERT_TRUE(c->pending_element.has_value());
  EXPECT_TRUE(ElementsEqual(*c->pending_element, *Sample().pending_element));
  ASSERT_EQ(c->metrics.size(), 2u);
  EXPECT_EQ(c->metrics[1].name, "accuracy");
  EXPECT_EQ(c->metrics[1].total, 150);
  EXPECT_EQ(c->metrics[1].count, 160);
  std::filesystem::remove(path);
}

// The file's payload is written piece by piece, the tensors from where they are; its bytes must
// be exactly protobuf's own serialization of the message they parse to.
TEST(CheckpointTest, PayloadIsProtobufsOwnSerialization) {
  TrainingCheckpoint full = Sample();
  full.variables.push_back({"empty", Tensor(DType::kFloat32, Shape({0, 4}))});
  full.variables.push_back({"", T({2.5f}, {})});  // proto3 leaves an empty name out
  full.frozen_variables = {"empty"};
  RankPosition rank;
  rank.iterator_state = "rank state";
  rank.metrics = {{"loss", 1, 2}};
  full.ranks = {rank, rank};
  TrainingCheckpoint bare;  // every field at its default
  TrainingCheckpoint weights;
  weights.weights_only = true;
  weights.variables = Sample().variables;
  for (const TrainingCheckpoint* c : {&full, &bare, &weights}) {
    const std::string path = CheckpointTempPath("canonical");
    ASSERT_TRUE(WriteCheckpoint(path, *c).ok());
    const std::string file = ReadFile(path);
    std::filesystem::remove(path);
    const size_t header = std::string("sluice-checkpoint-1\n").size() + 12;
    ASSERT_GE(file.size(), header);
    const std::string payload = file.substr(header);
    EXPECT_EQ(tfrecord::DecodeFixed64(file.data() + header - 12), payload.size());
    EXPECT_EQ(tfrecord::DecodeFixed32(file.data() + header - 4), MaskCrc32c(Crc32c(payload)));
    proto::TrainingCheckpointProto p;
    ASSERT_TRUE(p.ParseFromString(payload));
    EXPECT_EQ(p.SerializeAsString(), payload);
    EXPECT_EQ(p.variables_size(), static_cast<int>(c->variables.size()));
    EXPECT_EQ(p.optimizer().slots_size(), static_cast<int>(c->optimizer.slots.size()));
    EXPECT_EQ(p.ranks_size(), static_cast<int>(c->ranks.size()));
  }
}

// A checkpoint file's header: magic, the payload's length and its masked CRC-32C.
std::string CheckpointHeader(uint64_t length, uint32_t crc) {
  char fixed[12];
  tfrecord::EncodeFixed64(fixed, length);
  tfrecord::EncodeFixed32(fixed + 8, MaskCrc32c(crc));
  return "sluice-checkpoint-1\n" + std::string(fixed, sizeof(fixed));
}
void WriteFramed(const std::string& path, const std::string& payload) {
  WriteFile(path, CheckpointHeader(payload.size(), Crc32c(payload)) + payload);
}
// Field `field`'s key with wire type 2, and `length`: what precedes a length-delimited value.
std::string Delimited(int field, uint64_t length) { return Tag(field, 2) + Varint(length); }

// A checkpoint file's bytes made up as they are read: `head`, then `zeros` bytes of Pattern(),
// repeated, then `tail`. A real file of 2 GiB would take this VM 20 s to write or read back.
// `short_by` bytes fewer come than size() says, as from a file cut while it is read.
class PatternBetween : public InputStream {
 public:
  PatternBetween(std::string head, uint64_t zeros, std::string tail, uint64_t short_by = 0)
      : head_(std::move(head)), zeros_(zeros), tail_(std::move(tail)), short_by_(short_by) {}
  // 4 KB of float32 values 1, 2, ..., 1024.
  static const std::string& Pattern() {
    static const std::string* p = [] {
      auto* s = new std::string(4096, '\0');
      for (int i = 0; i < 1024; ++i) {
        const float v = static_cast<float>(i + 1);
        std::memcpy(s->data() + 4 * i, &v, 4);
      }
      return s;
    }();
    return *p;
  }
  uint64_t size() const { return head_.size() + zeros_ + tail_.size(); }
  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    if (at_ >= size() - short_by_) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, size() - short_by_ - at_));
    if (at_ < head_.size()) return Take(head_, at_, dst, n);
    if (at_ < head_.size() + zeros_) {
      const uint64_t from = at_ - head_.size();
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, zeros_ - from));
      const std::string& p = Pattern();
      for (size_t done = 0; done < take;) {
        const size_t offset = (from + done) % p.size();
        const size_t piece = std::min(take - done, p.size() - offset);
        std::memcpy(dst + done, p.data() + offset, piece);
        done += piece;
      }
      at_ += take;
      return take;
    }
    return Take(tail_, at_ - head_.size() - zeros_, dst, n);
  }

 private:
  size_t Take(const std::string& part, uint64_t from, char* dst, size_t n) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, part.size() - from));
    std::memcpy(dst, part.data() + from, take);
    at_ += take;
    return take;
  }

  std::string head_;
  uint64_t zeros_;
  std::string tail_;
  uint64_t short_by_;
  uint64_t at_ = 0;
};

// Protobuf parses at most 2 GiB; checkpoints are read field by field, so a variable of more than
// 2 GiB reads back, and so does what follows it.
TEST(CheckpointTest, AVariableOverTwoGibibytesReadsBack) {
  constexpr int64_t kElements = (int64_t{1} << 29) + 1;  // 2^31 + 4 bytes
  constexpr uint64_t kBytes = uint64_t{kElements} * sizeof(float);
  const std::string shape = Varint(kElements);
  const std::string huge_head = "\x0a\x04huge" + Delimited(2, shape.size()) + shape +
                                Delimited(3, kBytes);  // then kBytes of the pattern
  const uint64_t huge_length = huge_head.size() + kBytes;
  const std::string prefix = std::string("\x08\x01", 2) + Delimited(2, huge_length) + huge_head;
  const float after_values[2] = {1.5f, -2.0f};
  const std::string after_tensor = "\x0a\x05" + std::string("after") + "\x12\x01\x02" +
                                   Delimited(3, 8) +
                                   std::string(reinterpret_cast<const char*>(after_values), 8);
  const std::string suffix =
      Delimited(2, after_tensor.size()) + after_tensor + "\x20\x07";  // epoch
  uint32_t crc = Crc32cExtend(0, prefix);
  const std::string& pattern = PatternBetween::Pattern();
  for (uint64_t left = kBytes; left > 0;) {
    const uint64_t n = std::min<uint64_t>(left, pattern.size());
    crc = Crc32cExtend(crc, absl::string_view(pattern.data(), n));
    left -= n;
  }
  crc = Crc32cExtend(crc, suffix);
  const uint64_t length = prefix.size() + kBytes + suffix.size();
  ASSERT_GT(length, uint64_t{1} << 31);
  auto file =
      std::make_unique<PatternBetween>(CheckpointHeader(length, crc) + prefix, kBytes, suffix);
  const uint64_t size = file->size();

  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(std::move(file), size, "huge.ckpt");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->variables.size(), 2u);
  EXPECT_EQ(c->variables[0].first, "huge");
  EXPECT_EQ(c->variables[0].second.shape(), Shape({kElements}));
  const float* huge = c->variables[0].second.data<float>();
  for (int64_t i = 0; i < kElements; i += 4093) ASSERT_EQ(huge[i], (i % 1024) + 1) << i;
  EXPECT_EQ(huge[kElements - 1], 1.0f);  // 2^29 % 1024 + 1
  EXPECT_EQ(c->variables[1].first, "after");
  EXPECT_THAT(Values(c->variables[1].second), ElementsAre(1.5f, -2.0f));
  EXPECT_EQ(c->epoch, 7);
}

// Fields in another order than WriteCheckpoint's (the data before the shape, the optimizer's
// slots before its counters), unknown fields and a message met twice read as protobuf reads
// them.
TEST(CheckpointTest, FieldsInAnyOrderAndUnknownFieldsReadAsProtobufReadsThem) {
  const float values[3] = {1, 2, 3};
  const std::string data =
      Delimited(3, 12) + std::string(reinterpret_cast<const char*>(values), 12);
  const std::string tensor = data + "\x12\x02\x01\x03" + "\x0a\x01w" + "\x78\x05";  // field 15
  const std::string slot = "\x0a\x01m" + std::string("\x10\x03", 2) + data;  // unpacked shape
  const std::string optimizer = Delimited(3, slot.size()) + slot + std::string("\x08\x2a", 2);
  const std::string payload = "\x20\x02" + Delimited(2, tensor.size()) + tensor +
                              Delimited(3, optimizer.size()) + optimizer +
                              std::string("\x08\x01", 2) + Delimited(99, 3) + "abc";
  const std::string path = CheckpointTempPath("order");
  WriteFramed(path, payload);
  proto::TrainingCheckpointProto p;  // what protobuf makes of it
  ASSERT_TRUE(p.ParseFromString(payload));
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->variables.size(), 1u);
  EXPECT_EQ(c->variables[0].first, p.variables(0).name());
  EXPECT_EQ(c->variables[0].second.shape(), Shape({1, 3}));
  EXPECT_THAT(Values(c->variables[0].second), ElementsAre(1, 2, 3));
  ASSERT_EQ(c->optimizer.slots.size(), 1u);
  EXPECT_EQ(c->optimizer.slots[0].second.shape(), Shape({3}));
  EXPECT_EQ(c->optimizer.iterations, p.optimizer().iterations());
  EXPECT_EQ(c->optimizer.iterations, 42);
  EXPECT_EQ(c->epoch, 2);
}

// What protobuf keeps of fields met twice: a scalar's last value (the version, an explicit zero
// in a second optimizer message), a tensor's last data; repeated fields in order.
TEST(CheckpointTest, FieldsMetTwiceKeepWhatProtobufKeeps) {
  const float one[2] = {1, 2}, two[2] = {3, 4};
  const std::string tensor = "\x0a\x01w" + std::string("\x12\x01\x02", 3) + Delimited(3, 8) +
                             std::string(reinterpret_cast<const char*>(one), 8) + Delimited(3, 8) +
                             std::string(reinterpret_cast<const char*>(two), 8);
  const std::string first_optimizer = std::string("\x08\x2a", 2) + "\x15" + std::string(4, '\x11');
  const std::string second_optimizer = std::string("\x08\x00", 2);  // iterations = 0, explicitly
  const std::string payload = std::string("\x08\x02", 2) + Delimited(2, tensor.size()) + tensor +
                              Delimited(3, first_optimizer.size()) + first_optimizer +
                              Delimited(3, second_optimizer.size()) + second_optimizer +
                              std::string("\x08\x01", 2);
  proto::TrainingCheckpointProto p;
  ASSERT_TRUE(p.ParseFromString(payload));
  const std::string path = CheckpointTempPath("twice");
  WriteFramed(path, payload);
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(p.version(), 1);
  EXPECT_EQ(c->optimizer.iterations, p.optimizer().iterations());
  EXPECT_EQ(c->optimizer.iterations, 0);
  EXPECT_EQ(c->optimizer.learning_rate, p.optimizer().learning_rate());
  ASSERT_EQ(c->variables.size(), 1u);
  EXPECT_THAT(Values(c->variables[0].second), ElementsAre(3, 4));
}

// The stream behind a checkpoint: one that ends before its size, a size under a header, a
// structural error in a corrupt file (the checksum's message, with where reading stopped),
// and a length that fits in the file but not in its tensor.
TEST(CheckpointTest, ShortStreamsAndCorruptStructureAreDataLoss) {
  const float v[2] = {1, 2};
  const std::string tensor = "\x0a\x01w" + std::string("\x12\x01\x02", 3) + Delimited(3, 8) +
                             std::string(reinterpret_cast<const char*>(v), 8);
  const std::string payload = std::string("\x08\x01", 2) + Delimited(2, tensor.size()) + tensor;
  const std::string file = CheckpointHeader(payload.size(), Crc32c(payload)) + payload;
  {
    auto cut = std::make_unique<PatternBetween>(file, 0, "", 5);
    const absl::Status s = ReadCheckpoint(std::move(cut), file.size(), "cut.ckpt").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(s.message()), HasSubstr("the file ends 5 bytes early"));
  }
  {
    auto small = std::make_unique<PatternBetween>(file, 0, "");
    EXPECT_THAT(std::string(ReadCheckpoint(std::move(small), 20, "small.ckpt").status().message()),
                HasSubstr("small.ckpt: truncated: expected a 32-byte header, the file has 20"));
  }
  const std::string path = CheckpointTempPath("structure");
  std::string corrupt = file;
  corrupt[32 + 3] = '\x7f';  // the tensor's length: past the end
  WriteFile(path, corrupt);
  const std::string message = std::string(ReadCheckpoint(path).status().message());
  EXPECT_THAT(message, HasSubstr("payload checksum mismatch"));
  EXPECT_THAT(message, HasSubstr("(reading stopped at offset 36: a length-delimited field of 127 "
                                 "bytes runs past the end"));
  // The data's length fits in the file (a field follows) but not in the tensor.
  const std::string inner = "\x0a\x01w" + Delimited(3, 8) + "abcd";
  WriteFramed(path, std::string("\x08\x01", 2) + Delimited(2, inner.size()) + inner +
                        Delimited(99, 20) + std::string(20, 'x'));
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr("a length-delimited field of 8 bytes runs past the end of its message"));
  // A shape of more dimensions than any tensor has.
  std::string dims = "\x0a\x01w";
  for (int i = 0; i < 65; ++i) dims += std::string("\x10\x01", 2);
  WriteFramed(path, std::string("\x08\x01", 2) + Delimited(2, dims.size()) + dims);
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr("tensor 'w' has more than 64 dimensions"));
  std::filesystem::remove(path);
}

// A length that claims more than the file holds is DataLoss at its offset, before anything of
// that size is allocated; so is a varint that never ends and a wrong version.
TEST(CheckpointTest, LengthsPastTheirMessageAreDataLossWithoutAllocating) {
  const std::string path = CheckpointTempPath("lengths");
  const std::string tensor = "\x0a\x01w" + Delimited(3, uint64_t{1} << 40) + "xyz";
  WriteFramed(path, std::string("\x08\x01", 2) + Delimited(2, tensor.size()) + tensor);
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr(absl::StrCat(path, ": at offset ", 32 + 2 + 2 + 3 + 1 + 6,
                                     ": a length-delimited field of 1099511627776 bytes runs "
                                     "past the end of its message at offset ")));
  WriteFramed(path, std::string("\x08\x01", 2) + Delimited(2, 100) + "short");
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr("a length-delimited field of 100 bytes runs past the end"));
  WriteFramed(path, std::string("\x08\x01\x20", 3) + std::string(11, '\xff'));
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr("a varint of over 10 bytes"));
  WriteFramed(path, std::string("\x08\x02", 2));
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr(": at offset 33: expected checkpoint version 1, found 2"));
  WriteFramed(path, "");
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr("expected checkpoint version 1, found 0"));
  WriteFramed(path, std::string("\x08\x01\x0b", 3));  // a group: no field of ours is one
  EXPECT_THAT(std::string(ReadCheckpoint(path).status().message()),
              HasSubstr("field 1 has wire type 3"));
  std::filesystem::remove(path);
}

TEST(CheckpointTest, OptionalPartsStayAbsent) {
  const std::string path = CheckpointTempPath("absent");
  TrainingCheckpoint in;
  in.variables = {{"w", T({1}, {1})}};
  in.iterator_state = std::string();  // an empty state is still a state
  ASSERT_TRUE(WriteCheckpoint(path, in).ok());
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->iterator_state.has_value());
  EXPECT_FALSE(c->pending_element.has_value());
  EXPECT_TRUE(c->metrics.empty());
  in.iterator_state.reset();
  ASSERT_TRUE(WriteCheckpoint(path, in).ok());
  EXPECT_FALSE(ReadCheckpoint(path)->iterator_state.has_value());
  std::filesystem::remove(path);
}

TEST(CheckpointTest, WriteReplacesAtomicallyAndLeavesNoTemporaryFile) {
  const std::string dir = CheckpointTempPath("atomic");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/ckpt";
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  TrainingCheckpoint second = Sample();
  second.global_step = 30;
  ASSERT_TRUE(WriteCheckpoint(path, second).ok());
  EXPECT_EQ(ReadCheckpoint(path)->global_step, 30);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "ckpt");
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(CheckpointTest, CorruptFileIsDataLossNamingTheFile) {
  const std::string path = CheckpointTempPath("corrupt");
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  std::string bytes = ReadFile(path);
  bytes[bytes.size() - 10] ^= 0x40;  // inside the payload
  WriteFile(path, bytes);
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("checksum mismatch"));
  std::filesystem::remove(path);
}

// Rewrites the payload of the checkpoint at `path` through `edit`, with a valid length and CRC:
// what a corrupt writer (or an attacker) could leave behind.
template <typename Edit>
void RewritePayload(const std::string& path, Edit edit) {
  const std::string file = ReadFile(path);
  const size_t header = std::string("sluice-checkpoint-1\n").size() + 12;
  proto::TrainingCheckpointProto p;
  ASSERT_TRUE(p.ParseFromString(file.substr(header)));
  edit(p);
  const std::string payload = p.SerializeAsString();
  std::string out = file.substr(0, header - 12);
  char fixed[12];
  tfrecord::EncodeFixed64(fixed, payload.size());
  tfrecord::EncodeFixed32(fixed + 8, MaskCrc32c(Crc32c(payload)));
  out.append(fixed, 12);
  WriteFile(path, out + payload);
}

// Found by training_checkpoint_fuzzer: a variable's shape whose element count overflows int64
// (undefined behaviour in Shape::num_elements, then a byte count that wrapped to the data's).
TEST(CheckpointTest, ShapeWhoseSizeOverflowsIsDataLoss) {
  const std::string path = CheckpointTempPath("overflow");
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  RewritePayload(path, [](proto::TrainingCheckpointProto& p) {
    auto* shape = p.mutable_variables(0)->mutable_shape();
    shape->Clear();
    for (int i = 0; i < 4; ++i) shape->Add(int64_t{1} << 16);  // 2^64 elements
  });
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("tensor '0/dense/kernel': shape [65536, 65536, 65536, 65536] has more "
                        "than 2^59 elements"));
  std::filesystem::remove(path);
}

// Found by file_cache_fuzzer (through ElementFromProto, which the checkpoint's held-back element
// shares): a saved element allocated its tensor from the claimed shape before checking the bytes,
// 2^61 bytes here.
TEST(CheckpointTest, ElementClaimingMoreThanItHoldsIsDataLossWithoutAllocating) {
  const std::string path = CheckpointTempPath("huge_element");
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  RewritePayload(path, [](proto::TrainingCheckpointProto& p) {
    auto* t = p.mutable_pending_element()->mutable_components(1);
    t->clear_shape();
    t->add_shape(int64_t{1} << 58);
  });
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("saved float32[288230376151711744] tensor holds 8 bytes, expected "
                        "1152921504606846976"));
  std::filesystem::remove(path);
}

TEST(CheckpointTest, TruncatedFileIsDataLoss) {
  const std::string path = CheckpointTempPath("truncated");
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  const std::string bytes = ReadFile(path);
  WriteFile(path, bytes.substr(0, bytes.size() - 7));
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr(absl::StrCat("expected ", bytes.size() - 32, " bytes of payload, found ",
                                     bytes.size() - 39)));
  std::filesystem::remove(path);
}

TEST(CheckpointTest, NotACheckpointAndMissingFile) {
  const std::string path = CheckpointTempPath("other");
  WriteFile(path, "this is a text file, not a checkpoint");
  absl::StatusOr<TrainingCheckpoint> c = ReadCheckpoint(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("not a sluice checkpoint"));
  std::filesystem::remove(path);
  EXPECT_EQ(ReadCheckpoint(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(AssignVariablesTest, AssignsWhenNamesAndShapesMatch) {
  autodiff::Variable a(T({0, 0}, {2}), "a");
  autodiff::Variable b(T({0}, {1}), "b");
  ASSERT_TRUE(
      autodiff::AssignVariables({{"a", T({1, 2}, {2})}, {"b", T({3}, {1})}}, {&a, &b}, "f").ok());
  EXPECT_THAT(Values(a.value()), ElementsAre(1, 2));
  EXPECT_THAT(Values(b.value()), ElementsAre(3));
  // A snapshot is a copy: changing the variable leaves it alone.
  auto snapshot = *autodiff::SnapshotVariables({&a});
  ASSERT_TRUE(a.Assign(T({5, 6}, {2})).ok());
  EXPECT_THAT(Values(snapshot[0].second), ElementsAre(1, 2));
  EXPECT_EQ(snapshot[0].first, "a");
}

TEST(AssignVariablesTest, ShapeMismatchNamesVariableAndBothShapesAndAssignsNothing) {
  autodiff::Variable a(T({0, 0}, {2}), "layer/a");
  autodiff::Variable b(T({0, 0, 0, 0}, {2, 2}), "layer/b");
  absl::Status s = autodiff::AssignVariables(
      {{"layer/a", T({1, 2}, {2})}, {"layer/b", T({3, 4}, {1, 2})}}, {&a, &b}, "/tmp/model.ckpt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("/tmp/model.ckpt: variable 1 'layer/b': expected shape [2, 2] (the "
                        "model's), found [1, 2] in the checkpoint"));
  EXPECT_THAT(Values(a.value()), ElementsAre(0, 0));  // checked before assigning anything
}

TEST(AssignVariablesTest, NameAndCountMismatches) {
  autodiff::Variable a(T({0}, {1}), "a");
  autodiff::Variable b(T({0}, {1}), "b");
  absl::Status s =
      autodiff::AssignVariables({{"a", T({1}, {1})}, {"c", T({1}, {1})}}, {&a, &b}, "f");
  EXPECT_THAT(std::string(s.message()), HasSubstr("variable 1: expected 'b'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("found 'c'"));
  s = autodiff::AssignVariables({{"a", T({1}, {1})}}, {&a, &b}, "f");
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("expected 2 variables (the model's), found 1 in the checkpoint"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("the model's 'b'"));
  EXPECT_THAT(Values(a.value()), ElementsAre(0));
}

}  // namespace
}  // namespace sluice::train::fit
