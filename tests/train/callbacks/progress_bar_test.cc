// ProgressBar (train/progress_bar.h) with a fake clock, writing into memory.
#include "train/callbacks/progress_bar.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sluice::train::callbacks {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// A FILE* whose output lands in a string.
class MemoryStream {
 public:
  MemoryStream() : file_(open_memstream(&data_, &size_)) {}
  ~MemoryStream() {
    std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string str() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

TEST(ProgressBarTest, FormatDuration) {
  EXPECT_EQ(ProgressBar::FormatDuration(0.4), "0s");
  EXPECT_EQ(ProgressBar::FormatDuration(59.4), "59s");
  EXPECT_EQ(ProgressBar::FormatDuration(65), "1:05");
  EXPECT_EQ(ProgressBar::FormatDuration(3723), "1:02:03");
}

TEST(ProgressBarTest, NotATerminalPrintsOneLinePerEpoch) {
  MemoryStream out;
  double now = 100;
  ProgressBar bar("Epoch 2/5", 10,
                  {.stream = out.file(), .interactive = false, .clock = [&] { return now; }});
  EXPECT_FALSE(bar.interactive());
  now = 101;
  bar.Update(5, 320, {{"loss", 0.5}, {"accuracy", 0.25}});
  EXPECT_EQ(out.str(), "");  // nothing mid-epoch in a log file
  now = 104;
  bar.Finish(10, 640,
             {{"loss", 0.5},
              {"accuracy", 0.75},
              {"val_loss", 0.625},
              {"val_accuracy", 0.5},
              {"input_wait_share", 0.125},
              {"learning_rate", 0.01}});
  EXPECT_EQ(out.str(),
            "Epoch 2/5: 10/10 - 4s - 160 images/s - loss: 0.5000 - accuracy: 0.7500 - "
            "val_loss: 0.6250 - val_accuracy: 0.5000 - input_wait: 12.5%\n");
}

// The epoch's line gives Fit's training rate, not images over a time that includes the
// validation after the epoch (10x too slow with a test set ten times the training set). A NaN
// loss prints as "nan", as Keras prints it, whatever its sign bit.
TEST(ProgressBarTest, TheEpochLineGivesTheTrainingRateAndNaNAsNan) {
  MemoryStream out;
  double now = 100;
  ProgressBar bar("Epoch 1/1", 10,
                  {.stream = out.file(), .interactive = false, .clock = [&] { return now; }});
  now = 140;  // 4 s of training, 36 of validation
  bar.Finish(10, 640, {{"loss", -std::nan("")}, {"images_per_second", 160}, {"val_loss", 0.5}});
  EXPECT_EQ(out.str(), "Epoch 1/1: 10/10 - 40s - 160 images/s - loss: nan - val_loss: 0.5000\n");
}

TEST(ProgressBarTest, TerminalRedrawsABarWithEta) {
  MemoryStream out;
  double now = 0;
  ProgressBar bar("Epoch 1/3", 100,
                  {.stream = out.file(),
                   .interactive = true,
                   .width = 10,
                   .min_redraw_seconds = 0.5,
                   .clock = [&] { return now; }});
  EXPECT_EQ(out.str(), "Epoch 1/3\n");
  now = 2;
  bar.Update(25, 1600, {{"loss", 1.25}, {"accuracy", 0.5}});
  // 25 steps in 2 s: 75 more take 6 s; 1600 images in 2 s.
  EXPECT_EQ(out.str(),
            "Epoch 1/3\n\r 25/100 [=>........] - ETA: 6s - 800 images/s - loss: 1.2500 - "
            "accuracy: 0.5000\x1b[K");
  const size_t before = out.str().size();
  now = 2.1;  // too soon to redraw
  bar.Update(26, 1664, {{"loss", 1.0}});
  EXPECT_EQ(out.str().size(), before);
  now = 8;
  bar.Finish(100, 6400, {{"loss", 0.75}, {"accuracy", 0.875}});
  EXPECT_THAT(out.str(), EndsWith("\r100/100 [==========] - 8s - 800 images/s - loss: 0.7500 - "
                                  "accuracy: 0.8750\x1b[K\n"));
}

// An epoch resumed at step 60 of 100: the count and the bar go on from 60; the ETA and the rate
// are of this run's steps (20 steps in 2 s: the 20 left take 2 s more).
TEST(ProgressBarTest, AResumedEpochGoesOnFromItsStep) {
  MemoryStream out;
  double now = 0;
  ProgressBar bar("Epoch 2/3", 100,
                  {.stream = out.file(),
                   .interactive = true,
                   .width = 10,
                   .clock = [&] { return now; },
                   .first_step = 60});
  now = 2;
  bar.Update(20, 1280, {{"loss", 1.25}});
  EXPECT_THAT(out.str(),
              HasSubstr("\r 80/100 [=======>..] - ETA: 2s - 640 images/s - loss: 1.2500"));
  now = 4;
  bar.Finish(40, 2560, {{"loss", 1.0}});
  EXPECT_THAT(out.str(), HasSubstr("\r100/100 [==========] - 4s - 640 images/s - loss: 1.0000"));
}

TEST(ProgressBarTest, UnknownTotalHasNoEta) {
  MemoryStream out;
  double now = 0;
  ProgressBar bar("Epoch 1/1", -1,
                  {.stream = out.file(), .interactive = true, .clock = [&] { return now; }});
  now = 1;
  bar.Update(3, 30, {{"loss", 2.0}});
  EXPECT_THAT(out.str(), HasSubstr("3/unknown - 1s - 30 images/s - loss: 2.0000"));
  EXPECT_THAT(out.str(), Not(HasSubstr("ETA")));
}

}  // namespace
}  // namespace sluice::train::callbacks
