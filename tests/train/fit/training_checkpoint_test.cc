// Checkpoint files (train/checkpoint.h): round trip, corruption and mismatch errors.
#include "train/fit/training_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"
#include "tests/file_util.h"
#include "tests/train/gradient_check.h"
#include "train/proto/checkpoint.pb.h"

namespace sluice::train::fit {
namespace {

using ::sluice::testing::ReadFile;
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

// Protobuf parses at most 2 GiB, so a larger checkpoint is refused before anything is written
// (the tensor's 2 GiB are reserved address space, never touched).
TEST(CheckpointTest, OverTwoGibibytesIsRefusedBeforeWriting) {
  constexpr size_t kBytes = size_t{1} << 31;
  void* block =
      mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(block, MAP_FAILED);
  absl::StatusOr<Tensor> huge = Tensor::FromBuffer(
      DType::kFloat32, Shape({static_cast<int64_t>(kBytes / sizeof(float))}),
      Buffer::Wrap(block, kBytes, Device::Cpu(), [](void* p) { munmap(p, kBytes); }));
  ASSERT_TRUE(huge.ok()) << huge.status();
  TrainingCheckpoint c;
  c.variables = {{"huge", *std::move(huge)}};
  const std::string path = CheckpointTempPath("huge");
  const absl::Status s = WriteCheckpoint(path, c);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("2 GiB"));
  EXPECT_FALSE(std::filesystem::exists(path));
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
