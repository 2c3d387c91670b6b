// TensorBoard (train/tensorboard.h): a Fit's event files parse back with the History's values.
#include "train/callbacks/tensorboard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "io/tfrecord_reader.h"
#include "tests/train/fit_test_util.h"
#include "train/optimizers/sgd.h"
#include "train/proto/event.pb.h"

namespace sluice::train::callbacks {
namespace {

using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::TinyModel;
using ::testing::ElementsAre;

// tag -> [(step, value)] from one event file; checks the version record first.
std::map<std::string, std::vector<std::pair<int64_t, float>>> ReadScalars(const std::string& path) {
  std::map<std::string, std::vector<std::pair<int64_t, float>>> out;
  auto reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  std::string record;
  bool first = true;
  while (*(*reader)->ReadRecord(&record)) {
    proto::Event e;
    EXPECT_TRUE(e.ParseFromString(record));
    if (first) {
      EXPECT_EQ(e.file_version(), "brain.Event:2");
      first = false;
      continue;
    }
    for (const auto& v : e.summary().value()) out[v.tag()].emplace_back(e.step(), v.simple_value());
  }
  return out;
}

TEST(TensorBoardTest, WritesEpochAndBatchScalars) {
  const std::string dir = ::testing::TempDir() + "/tensorboard_test_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto model = TinyModel(1);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  fit::Trainer trainer(*model, sgd);
  TensorBoard tb({.log_dir = dir, .update_freq = 2});
  absl::StatusOr<fit::History> h = trainer.Fit(
      BlobsDataset(40, 3, 10),
      {.epochs = 3, .validation_data = BlobsDataset(30, 5, 10), .callbacks = {&tb}, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();

  ASSERT_EQ(std::filesystem::path(tb.train_path()).parent_path(), dir + "/train");
  auto train = ReadScalars(tb.train_path());
  for (const char* metric : {"loss", "accuracy", "learning_rate", "input_wait_share"}) {
    const auto& series = train["epoch_" + std::string(metric)];
    ASSERT_EQ(series.size(), 3u) << metric;
    for (int epoch = 0; epoch < 3; ++epoch) {
      EXPECT_EQ(series[epoch].first, epoch);
      EXPECT_EQ(series[epoch].second, static_cast<float>(h->at(metric)[epoch])) << metric;
    }
  }
  EXPECT_EQ(train.count("epoch_val_loss"), 0u);
  // Every 2nd global step of 12.
  std::vector<int64_t> steps;
  for (const auto& [step, value] : train["batch_loss"]) steps.push_back(step);
  EXPECT_THAT(steps, ElementsAre(2, 4, 6, 8, 10, 12));
  EXPECT_EQ(train["batch_loss"].back().second, static_cast<float>(h->at("loss").back()));

  ASSERT_EQ(std::filesystem::path(tb.validation_path()).parent_path(), dir + "/validation");
  auto val = ReadScalars(tb.validation_path());
  ASSERT_EQ(val["epoch_loss"].size(), 3u);
  EXPECT_EQ(val["epoch_loss"][2].second, static_cast<float>(h->at("val_loss")[2]));
  EXPECT_EQ(val["epoch_accuracy"][1].second, static_cast<float>(h->at("val_accuracy")[1]));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::train::callbacks
