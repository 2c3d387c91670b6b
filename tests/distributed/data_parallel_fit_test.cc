// Fit over several ranks (mpirun -np 2 and 3) against one process.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "dataset/auto_shard.h"
#include "dataset/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/distributed/test_communicator.h"
#include "tests/train/fit_test_util.h"
#include "train/callbacks/backup_and_restore.h"
#include "train/callbacks/early_stopping.h"
#include "train/callbacks/tensorboard.h"
#include "train/fit/trainer.h"
#include "train/fit/training_checkpoint.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::fit {
namespace {

using ::sluice::distributed::testing::TestComm;
using testing::Blobs;
using ::testing::HasSubstr;
using testing::RecordingCallback;
using testing::TinyModel;

std::vector<std::vector<float>> Values(layers::Module& model) {
  std::vector<std::vector<float>> out;
  for (autodiff::Variable* v : model.Variables()) {
    const Tensor& t = v->value();
    out.emplace_back(t.flat<float>().begin(), t.flat<float>().end());
  }
  return out;
}

void ExpectNear(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                float tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (size_t j = 0; j < a[i].size(); ++j) {
      ASSERT_NEAR(a[i][j], b[i][j], tolerance * (1 + std::abs(b[i][j])))
          << "variable " << i << " element " << j;
    }
  }
}

// A path under the temporary folder that rank 0 names for every rank (empty on failure).
std::string RankZerosPath(distributed::MpiCommunicator& comm, const std::string& prefix) {
  absl::StatusOr<std::vector<std::string>> paths =
      comm.AllGatherBytes(::testing::TempDir() + "/" + prefix + std::to_string(getpid()));
  return paths.ok() ? (*paths)[0] : std::string();
}

// N ranks with per-rank batch B / N train exactly as one process with batch B: the sharded
// batches of B / N together are the B-batch (element sharding), and the mean of the ranks' mean
// gradients is the mean gradient over B. Rank r starts from other values (seed r): Fit copies
// rank 0's to all.
template <typename MakeOptimizer>
void ExpectSameAsOneProcess(MakeOptimizer make_optimizer) {
  distributed::MpiCommunicator& comm = TestComm();
  const int n = comm.size();
  const int64_t global_batch = 12;
  ASSERT_EQ(global_batch % n, 0);
  const Element data = Blobs(240, 7);

  // The reference: one process, batch 12 (every rank computes it alone).
  std::unique_ptr<layers::Sequential> one = TinyModel(1);
  auto one_opt = make_optimizer();
  Trainer single(*one, *one_opt);
  ASSERT_TRUE(
      single.Fit(Dataset::FromTensorSlices(data).Batch(global_batch), {.epochs = 2, .verbose = 0})
          .ok());

  std::unique_ptr<layers::Sequential> replica = TinyModel(1 + comm.rank());
  auto opt = make_optimizer();
  Trainer parallel(*replica, *opt, {.communicator = &comm});
  absl::StatusOr<History> h = parallel.Fit(Dataset::FromTensorSlices(data).Batch(global_batch / n),
                                           {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->epochs.size(), 2u);
  EXPECT_EQ(parallel.global_step(), 2 * 240 / global_batch);
  ExpectNear(Values(*replica), Values(*one), 2e-5f);
  EXPECT_GE(h->at("allreduce_exposed_share")[0], 0.0);
  EXPECT_LE(h->at("allreduce_exposed_share")[0], 1.0);
}

TEST(DataParallelFitTest, SgdMatchesOneProcessWithTheWholeBatch) {
  SLUICE_REQUIRE_RANKS(2);
  ExpectSameAsOneProcess([] {
    return std::make_unique<optimizers::Sgd>(
        optimizers::SgdOptions{.learning_rate = 0.1f, .momentum = 0.9f});
  });
}

TEST(DataParallelFitTest, AdamMatchesOneProcessWithTheWholeBatch) {
  SLUICE_REQUIRE_RANKS(2);
  ExpectSameAsOneProcess([] {
    return std::make_unique<optimizers::Adam>(optimizers::AdamOptions{.learning_rate = 0.01f});
  });
}

// Small buckets: several all-reduces per step, started from the tape's hook.
TEST(DataParallelFitTest, SmallBucketsGiveTheSameResult) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  const Element data = Blobs(96, 3);
  std::vector<std::vector<float>> results;
  for (int64_t bucket_bytes : {int64_t{64}, kDefaultBucketBytes}) {
    std::unique_ptr<layers::Sequential> model = TinyModel(5);
    optimizers::Sgd sgd({.learning_rate = 0.1f});
    Trainer t(*model, sgd, {.communicator = &comm, .bucket_bytes = bucket_bytes});
    const int64_t before = comm.collectives();
    ASSERT_TRUE(t.Fit(Dataset::FromTensorSlices(data).Batch(6), {.verbose = 0}).ok());
    if (bucket_bytes == 64) {
      // 4 variables, each over 64 bytes: 4 buckets a step, besides the per-step agreement.
      EXPECT_GE(comm.collectives() - before, t.global_step() * 5);
    }
    for (auto& v : Values(*model)) results.push_back(v);
  }
  ASSERT_EQ(results.size(), 8u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(results[i], results[i + 4]) << i;
}

// The ranks agree after each step on whether to read its logs only where some rank has a
// callback or a live progress bar: without any, a step costs one collective less. A callback on
// one rank alone brings the agreement back on every rank, and it gets the logs of every step
// (each read sums the metrics over the ranks: a second collective).
TEST(DataParallelFitTest, StepsAgreeOnReadingLogsOnlyWhereSomethingMayReadThem) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  const Element data = Blobs(96, 3);
  int64_t per_fit[2] = {0, 0};
  for (int with_callback = 0; with_callback < 2; ++with_callback) {
    std::unique_ptr<layers::Sequential> model = TinyModel(5);
    optimizers::Sgd sgd({.learning_rate = 0.1f});
    Trainer t(*model, sgd, {.communicator = &comm});
    RecordingCallback recorder;
    FitOptions options{.epochs = 2, .verbose = 0};
    if (with_callback == 1 && comm.rank() == comm.size() - 1) options.callbacks = {&recorder};
    const int64_t before = comm.collectives();
    ASSERT_TRUE(t.Fit(Dataset::FromTensorSlices(data).Batch(6), options).ok());
    per_fit[with_callback] = comm.collectives() - before;
    if (!options.callbacks.empty()) {
      EXPECT_EQ(static_cast<int64_t>(recorder.batch_losses.size()), t.global_step());
    }
    if (with_callback == 1) {
      EXPECT_EQ(per_fit[1] - per_fit[0], 2 * t.global_step());
    }
  }
}

// TensorBoard reads the metrics every update_freq global steps. An epoch starting between two of
// them must still agree per step: asked only at the epoch's start whether that step needs them,
// the ranks agreed on "no", and at the next multiple the TensorBoard rank alone read them (a
// collective the others did not make: Fit failed in the second epoch).
class LossSeeingTensorBoard : public callbacks::TensorBoard {
 public:
  using TensorBoard::TensorBoard;
  absl::Status OnBatchEnd(int64_t batch, const callbacks::Logs& logs) override {
    if (NeedsBatchLogs()) steps_with_loss.push_back(logs.contains("loss") ? 1 : 0);
    return TensorBoard::OnBatchEnd(batch, logs);
  }
  std::vector<int> steps_with_loss;
};

TEST(DataParallelFitTest, ACallbackReadingEveryNthStepOnOneRankKeepsTheRanksInStep) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  const std::string dir = RankZerosPath(comm, "tensorboard-every-7-");
  ASSERT_FALSE(dir.empty());
  std::unique_ptr<layers::Sequential> model = TinyModel(5);
  optimizers::Sgd sgd({.learning_rate = 0.1f});
  Trainer t(*model, sgd, {.communicator = &comm});
  LossSeeingTensorBoard board({.log_dir = dir, .update_freq = 7});
  FitOptions options{.epochs = 3, .verbose = 0};
  if (comm.rank() == comm.size() - 1) options.callbacks = {&board};
  // 96 elements in batches of 6: 8 steps an epoch on 2 ranks, 5 or 6 on 3, none a multiple of 7.
  absl::StatusOr<History> history =
      t.Fit(Dataset::FromTensorSlices(Blobs(96, 3)).Batch(6), options);
  ASSERT_TRUE(history.ok()) << history.status();
  if (!options.callbacks.empty()) {
    EXPECT_EQ(static_cast<int64_t>(board.steps_with_loss.size()), t.global_step() / 7);
    EXPECT_THAT(board.steps_with_loss, ::testing::Each(1));
  }
}

// Ranks whose shards differ in length take the same number of steps: the shortest shard's.
TEST(DataParallelFitTest, EveryRankTakesTheSameStepsWhenShardsDiffer) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  std::unique_ptr<layers::Sequential> model = TinyModel(2);
  optimizers::Sgd sgd({.learning_rate = 0.05f});
  Trainer t(*model, sgd, {.communicator = &comm, .auto_shard = AutoShardPolicy::kOff});
  // Rank r reads 5 + 2 r batches of 4 per pass.
  const Dataset mine = Dataset::FromTensorSlices(Blobs(4 * (5 + 2 * comm.rank()), 9)).Batch(4);
  RecordingCallback recorder;
  absl::StatusOr<History> h = t.Fit(mine, {.epochs = 3, .callbacks = {&recorder}, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(t.global_step(), 15);
  EXPECT_EQ(recorder.batch_losses.size(), 15u);
  // The logs are the ranks' together: the same everywhere.
  std::vector<double> loss = {h->at("loss").back(), -h->at("loss").back()};
  ASSERT_TRUE(comm.AllReduceValues(absl::MakeSpan(loss), distributed::ReduceOp::kMax).ok());
  EXPECT_EQ(loss[0], -loss[1]);
}

TEST(DataParallelFitTest, ShardsAreDisjointAndCoverTheEpoch) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  std::vector<int64_t> ids(101);
  for (int64_t i = 0; i < 101; ++i) ids[i] = i;
  absl::StatusOr<ShardedDataset> shard =
      AutoShard(Dataset::FromTensorSlices({Tensor::FromVector(ids)}), comm.size(), comm.rank());
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->policy, AutoShardPolicy::kData);
  std::string mine;
  std::unique_ptr<Iterator> it = shard->dataset.MakeIterator();
  while (true) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
    absl::StrAppend(&mine, (**e)[0].scalar<int64_t>(), ",");
  }
  absl::StatusOr<std::vector<std::string>> all = comm.AllGatherBytes(mine);
  ASSERT_TRUE(all.ok());
  std::vector<int> seen(101, 0);
  for (const std::string& s : *all) {
    for (absl::string_view id : absl::StrSplit(s, ',', absl::SkipEmpty())) {
      int v = 0;
      ASSERT_TRUE(absl::SimpleAtoi(id, &v));
      ++seen[v];
    }
  }
  for (int i = 0; i < 101; ++i) EXPECT_EQ(seen[i], 1) << i;
}

// Rank 1's model has another hidden width: every rank fails at start-up, naming rank 1 and the
// first variable that differs.
TEST(DataParallelFitTest, AMismatchedModelIsFoundAtStartUp) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  std::unique_ptr<layers::Sequential> model = TinyModel(1, comm.rank() == 1 ? 8 : 16);
  optimizers::Sgd sgd({.learning_rate = 0.1f});
  Trainer t(*model, sgd, {.communicator = &comm});
  absl::StatusOr<History> h =
      t.Fit(Dataset::FromTensorSlices(Blobs(24, 1)).Batch(4), {.verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(h.status().message(), HasSubstr("rank 1's model differs from rank 0's"));
  EXPECT_THAT(h.status().message(), HasSubstr("[4, 16] on rank 0 and"));
  EXPECT_THAT(h.status().message(), HasSubstr("[4, 8] on rank 1"));
}

// A checkpoint in the middle of an epoch holds every rank's input position: a new job of as
// many ranks continues exactly; a job of another size is refused.
void ExpectCheckpointResumesEveryRankExactly(int accumulation_steps) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  const std::string dir = RankZerosPath(comm, "sluice_dp_ckpt_");
  ASSERT_FALSE(dir.empty());
  if (comm.rank() == 0) std::filesystem::create_directories(dir);
  ASSERT_TRUE(comm.Barrier().ok());
  const std::string path = dir + "/mid.ckpt";
  const Dataset data = Dataset::FromTensorSlices(Blobs(96, 4)).Shuffle(32).Batch(4);
  const FitOptions base = {
      .epochs = 3, .accumulation_steps = accumulation_steps, .seed = 11, .verbose = 0};

  std::unique_ptr<layers::Sequential> model = TinyModel(3);
  optimizers::Adam adam({.learning_rate = 0.01f});
  Trainer t(*model, adam, {.communicator = &comm});
  RecordingCallback saver;
  saver.on_batch_end = [&](int64_t, const callbacks::Logs&) {
    return t.global_step() == 13 ? t.SaveCheckpoint(path) : absl::OkStatus();
  };
  FitOptions first = base;
  first.callbacks = {&saver};
  ASSERT_TRUE(t.Fit(data, first).ok());
  const std::vector<std::vector<float>> uninterrupted = Values(*model);

  std::unique_ptr<layers::Sequential> resumed_model = TinyModel(99);
  optimizers::Adam resumed_adam({.learning_rate = 0.01f});
  Trainer resumed(*resumed_model, resumed_adam, {.communicator = &comm});
  ASSERT_TRUE(resumed.LoadCheckpoint(path).ok());
  EXPECT_EQ(resumed.global_step(), 13);
  ASSERT_TRUE(resumed.Fit(data, base).ok());
  EXPECT_EQ(Values(*resumed_model), uninterrupted);

  // One process cannot take the ranks' positions.
  std::unique_ptr<layers::Sequential> alone = TinyModel(3);
  optimizers::Adam alone_adam({.learning_rate = 0.01f});
  Trainer single(*alone, alone_adam);
  absl::Status refused = single.LoadCheckpoint(path);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(),
              HasSubstr(absl::StrCat("written by a job of ", comm.size(), " ranks")));
  ASSERT_TRUE(comm.Barrier().ok());
  if (comm.rank() == 0) std::filesystem::remove_all(dir);
}

TEST(DataParallelFitTest, CheckpointResumesEveryRankExactly) {
  ExpectCheckpointResumesEveryRankExactly(1);
}

// Saved at step 13 of an accumulation over 3: each rank's partial sums (1 micro-batch of its own
// gradients, not yet all-reduced) are in the checkpoint, and every rank continues its own.
TEST(DataParallelFitTest, CheckpointInsideAGradientAccumulationResumesEveryRankExactly) {
  ExpectCheckpointResumesEveryRankExactly(3);
}

// Fit over 2 epochs of `data`, validating, where the last rank gets SIGTERM after global step
// `step`: every rank stops after that step with the same Preempted error, without validating
// (the grace period is the backup's), and rank 0's one backup, of that step, holds every rank's
// position. `before_backup` are listed between the signal and the backup.
void ExpectEveryRankPreemptedAfter(int64_t step, std::optional<int64_t> steps_per_epoch,
                                   std::vector<callbacks::Callback*> before_backup) {
  SLUICE_REQUIRE_RANKS(2);
  distributed::MpiCommunicator& comm = TestComm();
  const std::string dir = RankZerosPath(comm, "sluice_dp_preempt_");
  ASSERT_FALSE(dir.empty());
  std::unique_ptr<layers::Sequential> model = TinyModel(3);
  optimizers::Adam adam({.learning_rate = 0.01f});
  Trainer t(*model, adam, {.communicator = &comm});
  RecordingCallback signaller;
  signaller.on_batch_end = [&](int64_t, const callbacks::Logs&) {
    if (comm.rank() == comm.size() - 1 && t.global_step() == step) raise(SIGTERM);
    return absl::OkStatus();
  };
  bool validated = false;
  signaller.on_epoch_end = [&](int64_t, const callbacks::Logs& logs) {
    validated = validated || logs.contains("val_loss");
    return absl::OkStatus();
  };
  callbacks::BackupAndRestore backup(
      {.backup_dir = dir, .save_freq = 100, .save_before_preemption = true});
  std::vector<callbacks::Callback*> callbacks = {&signaller};
  callbacks.insert(callbacks.end(), before_backup.begin(), before_backup.end());
  callbacks.push_back(&backup);
  const Dataset data = Dataset::FromTensorSlices(Blobs(96, 4)).Batch(4);
  const absl::Status stopped = t.Fit(data, {.epochs = 2,
                                            .steps_per_epoch = steps_per_epoch,
                                            .validation_data = data,
                                            .callbacks = callbacks,
                                            .verbose = 0})
                                   .status();
  EXPECT_TRUE(callbacks::IsPreemption(stopped)) << stopped;
  EXPECT_EQ(t.global_step(), step);
  EXPECT_FALSE(validated);
  ASSERT_TRUE(comm.Barrier().ok());
  absl::StatusOr<std::vector<std::string>> backups = backup.Backups();
  ASSERT_TRUE(backups.ok()) << backups.status();
  ASSERT_EQ(backups->size(), 1u);
  absl::StatusOr<TrainingCheckpoint> ckpt = ReadCheckpoint((*backups)[0]);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->global_step, step);
  EXPECT_EQ(ckpt->ranks.size(), static_cast<size_t>(comm.size()));
  ASSERT_TRUE(comm.Barrier().ok());
  if (comm.rank() == 0) std::filesystem::remove_all(dir);
}

// save_before_preemption over ranks: only the last rank gets SIGTERM, after step 5 of an epoch.
TEST(DataParallelFitTest, ASigtermOnOneRankStopsEveryRankAfterTheSameStep) {
  ExpectEveryRankPreemptedAfter(5, std::nullopt, {});
}

// A SIGTERM in an epoch's last step: no later step agrees on it, so the ranks agree before the
// epoch's validation, which the grace period has no time for (it ran, before). EarlyStopping,
// listed before the backup and monitoring val_loss, skips the preempted epoch instead of failing
// Fit for the missing val_loss before the backup is written.
TEST(DataParallelFitTest, ASigtermInAnEpochsLastStepSkipsItsValidationOnEveryRank) {
  callbacks::EarlyStopping stopping({.monitor = "val_loss", .patience = 5});
  ExpectEveryRankPreemptedAfter(3, /*steps_per_epoch=*/3, {&stopping});
}

}  // namespace
}  // namespace sluice::train::fit
