// Crash consistency of `sluice train --backup-dir`: runs killed with SIGKILL at random moments,
// and inside checkpoint writes (io/crash_point.h's "atomic_file_commit"), then started again
// with the same command, end with the same weights and test loss, bit for bit, as a run never
// interrupted (issue 46).

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/file_util.h"
#include "tests/tools/cli_test_util.h"
#include "tests/train/recipes/recipe_test_util.h"
#include "train/backend/compute_precision.h"
#include "train/fit/training_checkpoint.h"

namespace sluice {
namespace {

using ::sluice::cli_test::RunSluice;
using ::sluice::cli_test::ShellQuote;
using ::sluice::cli_test::TempPath;
using ::sluice::testing::ReadFile;
using ::testing::HasSubstr;

constexpr char kSource[] = "/usr/share/datasets/fashion-mnist";

// The sanitizers slow each run several times over: the test runs in the Release build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kSanitized = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kSanitized = 1;
#else
constexpr int kSanitized = 0;
#endif
#else
constexpr int kSanitized = 0;
#endif

struct KillableRun {
  bool killed = false;  // by SIGKILL
  int signal = 0;       // the signal that ended it, if one did
  int exit_code = -1;
  double seconds = 0;
  bool signal_sent = false;  // `signal` was sent while the process ran
  // Its standard output just after the signal was sent: a process already in its exit (its
  // buffered output written, waitpid not yet told) takes no signal.
  std::string out_at_signal;
  std::string out, err;
};

// Runs `sluice args...` with SLUICE_CRASH_AT=`crash_at` (when not empty; the crash point sends
// SIGTERM instead of SIGKILL with `crash_sigterm`), sending it `signal` after `kill_after`
// seconds (when > 0) unless it ended before, then waiting for its end (a SIGKILL after 300 s in
// all).
KillableRun RunSluiceUntil(const std::vector<std::string>& args, const std::string& crash_at,
                           double kill_after, int signal = SIGKILL, bool crash_sigterm = false) {
  const std::string out_path = TempPath("crash_stdout");
  const std::string err_path = TempPath("crash_stderr");
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, STDERR_FILENO);
    if (!crash_at.empty()) setenv("SLUICE_CRASH_AT", crash_at.c_str(), 1);
    if (crash_sigterm) setenv("SLUICE_CRASH_SIGNAL", "TERM", 1);
    std::vector<char*> argv = {const_cast<char*>(SLUICE_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(SLUICE_BINARY, argv.data());
    _exit(127);
  }
  KillableRun run;
  int status = 0;
  bool sent = false;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done == pid) {
      run.seconds = elapsed;
      break;
    }
    if (!sent && kill_after > 0 && elapsed >= kill_after) {
      kill(pid, signal);
      sent = true;
      run.out_at_signal = ReadFile(out_path);
    }
    if (elapsed > 300) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      run.seconds = elapsed;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  run.killed = run.signal == SIGKILL;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.signal_sent = sent;
  run.out = ReadFile(out_path);
  run.err = ReadFile(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return run;
}

std::string JsonField(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return "";
  const size_t end = json.find_first_of(",}", at + needle.size());
  return json.substr(at + needle.size(), end - at - needle.size());
}

// `sluice train` with `common` args plus each of `extra`.
std::vector<std::string> With(std::vector<std::string> common,
                              const std::vector<std::string>& extra) {
  common.insert(common.end(), extra.begin(), extra.end());
  return common;
}

void ExpectSameWeights(const std::string& a_dir, const std::string& b_dir) {
  auto a = train::fit::ReadCheckpoint(a_dir + "/weights.ckpt");
  auto b = train::fit::ReadCheckpoint(b_dir + "/weights.ckpt");
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " " << b.status();
  ASSERT_EQ(a->variables.size(), b->variables.size());
  for (size_t i = 0; i < a->variables.size(); ++i) {
    EXPECT_EQ(a->variables[i].first, b->variables[i].first);
    EXPECT_TRUE(a->variables[i].second.Equals(b->variables[i].second)) << a->variables[i].first;
  }
}

// Fashion-MNIST's records, made once per suite.
class FashionMnistRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new std::string(TempPath("crash_fashion_mnist"));
    cli_test::CliResult r = RunSluice("convert fashion-mnist --source " + std::string(kSource) +
                                      " --out " + ShellQuote(*data_) + " --shards 8");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // One test shard of eight (1,250 images): each run's final evaluation stays short.
    for (int shard = 1; shard < 8; ++shard) {
      std::filesystem::remove(absl::StrCat(*data_, "/test-0000", shard, "-of-00008.tfrecord"));
    }
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*data_);
    delete data_;
    data_ = nullptr;
  }
  static std::string* data_;
};
std::string* FashionMnistRuns::data_ = nullptr;

class CrashResumeTest : public FashionMnistRuns,
                        public ::testing::WithParamInterface<std::string> {};
class PreemptionTest : public FashionMnistRuns {};

// The cnn, 2 epochs of 6 steps, a backup every 3 steps: kills land before, between and inside
// backups; each restart continues from the newest whole one.
TEST_P(CrashResumeTest, KilledAndRestartedRunsEndAsTheUninterruptedRun) {
  const std::string precision = GetParam();
  if (precision == "mixed_bfloat16" &&
      !train::backend::CheckPrecisionSupported(Device::Cpu(),
                                               train::backend::Precision::kMixedBFloat16)
           .ok()) {
    GTEST_SKIP() << "this CPU has no bfloat16 matmul (AVX512-BF16 or AMX)";
  }
  if (kSanitized) {
    // Each killed run would take several times as long, for what the Release build checks; the
    // sanitizers check the resume itself in train_tests' BackupAndRestoreTest.
    GTEST_SKIP() << "in the Release build only (CI's time)";
  }
  const std::vector<std::string> common = {
      "train", "--data",   *data_, "--model", "cnn", "--limit",     "192",     "--batch",
      "32",    "--epochs", "2",    "--seed",  "5",   "--precision", precision, "--json"};
  const std::string reference = TempPath("crash_reference");
  const KillableRun straight = RunSluiceUntil(With(common, {"--save", reference}), "", 0);
  ASSERT_EQ(straight.exit_code, 0) << straight.out;

  const std::string backups = TempPath("crash_backups");
  const std::string model = TempPath("crash_model");
  const std::vector<std::string> args =
      With(common, {"--backup-dir", backups, "--checkpoint-every", "3", "--save", model});
  // A crash inside each of the first three backup writes of a run started afresh, then kills at
  // random moments over the reference run's length (a run that ends before its kill is checked
  // too, and the next starts afresh: it deleted its backups).
  const int random_kills = precision == "float32" ? 17 : 6;
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(precision)));
  std::uniform_real_distribution<double> moment(0.05 * straight.seconds, straight.seconds);
  int kills = 0;
  int in_write = 0;
  int whole = 0;
  auto check_whole = [&](const KillableRun& run) {
    ASSERT_EQ(run.exit_code, 0) << run.out;
    ++whole;
    EXPECT_EQ(JsonField(run.out, "test_loss"), JsonField(straight.out, "test_loss"));
    ExpectSameWeights(reference, model);
    // A run that ends deletes its backups (Keras' delete_checkpoint).
    EXPECT_TRUE(std::filesystem::is_empty(backups));
  };
  for (int attempt = 0; kills < random_kills + 3 && attempt < 100; ++attempt) {
    const bool in_a_write = in_write < 3;
    const KillableRun run =
        RunSluiceUntil(args, in_a_write ? absl::StrCat("atomic_file_commit:", in_write + 1) : "",
                       in_a_write ? 0 : moment(rng));
    if (!run.killed) {
      ASSERT_FALSE(in_a_write) << "the crash point was not reached: " << run.out;
      check_whole(run);
      continue;
    }
    ++kills;
    if (in_a_write) ++in_write;
    if (in_a_write && in_write == 3) {
      // Killed in its 1st write, the first run left nothing; the second wrote step 3's backup
      // and died writing step 6's; the third resumed at step 3 (a fresh start would have written
      // steps 3 and 6), wrote 6 and 9, and died writing 12's: 6 and 9 are left, whole.
      std::vector<std::string> left;
      for (const auto& entry : std::filesystem::directory_iterator(backups)) {
        left.push_back(entry.path().filename().string());
      }
      std::sort(left.begin(), left.end());
      ASSERT_GE(left.size(), 2u);
      EXPECT_EQ(left[0], "ckpt-000000000006.ckpt");
      EXPECT_EQ(left[1], "ckpt-000000000009.ckpt");
    }
  }
  check_whole(RunSluiceUntil(args, "", 0));
  EXPECT_EQ(kills, random_kills + 3);
  EXPECT_FALSE(JsonField(straight.out, "test_loss").empty()) << straight.out;
  std::printf("[ crash    ] %s: %d kills (%d inside a backup's write), %d whole runs\n",
              precision.c_str(), kills, in_write, whole);
  for (const std::string& dir : {reference, backups, model}) std::filesystem::remove_all(dir);
}

// SIGTERM, as a scheduler preempts a job: the run writes a backup after the step in progress and
// exits with 143 (no periodic backups here: every backup is a preemption's), and the runs
// started again end as the run never interrupted. A SIGTERM before Fit ends the process as it
// always did; the backups stay until a run has written its result, so the run started again
// finishes it. One after Fit waits for the test evaluation and the save: a whole run.
TEST_F(PreemptionTest, PreemptedRunsWriteABackupOfTheirStepAndResumeFromIt) {
  if (kSanitized) GTEST_SKIP() << "in the Release build only (CI's time)";
  const std::vector<std::string> common = {"train",   "--data", *data_,    "--model", "cnn",
                                           "--limit", "192",    "--batch", "32",      "--epochs",
                                           "2",       "--seed", "5",       "--json"};
  const std::string reference = TempPath("preempt_reference");
  const KillableRun straight = RunSluiceUntil(With(common, {"--save", reference}), "", 0);
  ASSERT_EQ(straight.exit_code, 0) << straight.out;

  const std::string backups = TempPath("preempt_backups");
  const std::string model = TempPath("preempt_model");
  const std::vector<std::string> args =
      With(common, {"--backup-dir", backups, "--checkpoint-every", "1000", "--save", model});
  // Moments before the final evaluation, which takes the run's last quarter or so.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> moment(0.05 * straight.seconds, 0.75 * straight.seconds);
  int preempted = 0, outside_fit = 0, whole = 0, late = 0, exiting_when_signalled = 0;
  for (int attempt = 0; preempted < 3 && attempt < 60; ++attempt) {
    const KillableRun run = RunSluiceUntil(args, "", moment(rng), SIGTERM);
    if (run.exit_code == 143) {
      ++preempted;
      // Its backup is the only one (the resumed run deleted none: it never ended).
      std::vector<std::string> left;
      for (const auto& entry : std::filesystem::directory_iterator(backups)) {
        left.push_back(entry.path().filename().string());
      }
      EXPECT_FALSE(left.empty()) << "a preempted run left no backup";
      EXPECT_EQ(JsonField(run.out, "test_loss"), "") << "a preempted run reported a result";
    } else if (run.signal == SIGTERM) {
      ++outside_fit;
      const KillableRun rest = RunSluiceUntil(args, "", 0);
      ASSERT_EQ(rest.exit_code, 0) << rest.out;
      EXPECT_EQ(JsonField(rest.out, "test_loss"), JsonField(straight.out, "test_loss"));
      ExpectSameWeights(reference, model);
      EXPECT_TRUE(std::filesystem::is_empty(backups));
    } else {
      ASSERT_EQ(run.exit_code, 0) << run.out;
      // Signalled after Fit: the signal waited for the evaluation and the save, and said so.
      // Unless the result was written by the time the signal was sent (read just after it): then
      // the process was exiting, or the signal would have ended it (the watch ends before the
      // result is written). A signal the watch took, followed by the result before that read,
      // goes unchecked too: the price of never failing on a run that had already ended.
      const bool exiting = absl::StrContains(run.out_at_signal, "\"test_loss\"");
      if (run.signal_sent && exiting) ++exiting_when_signalled;
      if (run.signal_sent && !exiting) {
        EXPECT_THAT(run.err,
                    HasSubstr("SIGTERM arrived at the end of training: the test evaluation and "
                              "the save finished first"));
        ++late;
      }
      ++whole;
      EXPECT_EQ(JsonField(run.out, "test_loss"), JsonField(straight.out, "test_loss"));
      ExpectSameWeights(reference, model);
    }
  }
  EXPECT_EQ(preempted, 3);
  const KillableRun last = RunSluiceUntil(args, "", 0);
  ASSERT_EQ(last.exit_code, 0) << last.out;
  EXPECT_EQ(JsonField(last.out, "test_loss"), JsonField(straight.out, "test_loss"));
  ExpectSameWeights(reference, model);
  EXPECT_TRUE(std::filesystem::is_empty(backups));
  std::printf(
      "[ preempt  ] %d preempted runs, %d ended before Fit, %d whole runs (%d signalled "
      "after Fit, %d while exiting)\n",
      preempted, outside_fit, whole, late, exiting_when_signalled);
  for (const std::string& dir : {reference, backups, model}) std::filesystem::remove_all(dir);
}

// A SIGTERM at an exact moment: inside each atomic file write in turn (SLUICE_CRASH_SIGNAL=TERM).
// In a backup that Fit looks past it is a preemption (143); in the last epoch's backup or the
// save after the test evaluation it waits for the evaluation and the save: the run ends whole,
// with the uninterrupted run's model, says so, and deletes its backups.
TEST_F(PreemptionTest, ASigtermAfterTrainingWaitsForTheEvaluationAndTheSave) {
  if (kSanitized) GTEST_SKIP() << "in the Release build only (CI's time)";
  const std::vector<std::string> common = {"train",   "--data", *data_,    "--model", "mlp",
                                           "--limit", "128",    "--batch", "32",      "--epochs",
                                           "2",       "--seed", "5",       "--json"};
  const std::string reference = TempPath("late_sigterm_reference");
  const KillableRun straight = RunSluiceUntil(With(common, {"--save", reference}), "", 0);
  ASSERT_EQ(straight.exit_code, 0) << straight.out;
  const std::string backups = TempPath("late_sigterm_backups");
  const std::string model = TempPath("late_sigterm_model");
  const std::vector<std::string> args = With(common, {"--backup-dir", backups, "--save", model});
  int preempted = 0, late = 0;
  for (int n = 1; n <= 20; ++n) {
    for (const std::string& dir : {backups, model}) std::filesystem::remove_all(dir);
    const KillableRun run = RunSluiceUntil(args, absl::StrCat("atomic_file_commit:", n), 0, SIGKILL,
                                           /*crash_sigterm=*/true);
    if (run.exit_code == 143) {
      ++preempted;
      continue;
    }
    ASSERT_EQ(run.exit_code, 0) << "write " << n << ": " << run.err;
    if (run.err.find("SIGTERM arrived at the end of training") == std::string::npos)
      break;  // past all
    ++late;
    EXPECT_THAT(run.err,
                HasSubstr("SIGTERM arrived at the end of training: the test evaluation and the "
                          "save finished first"));
    EXPECT_EQ(JsonField(run.out, "test_loss"), JsonField(straight.out, "test_loss"));
    ExpectSameWeights(reference, model);
    EXPECT_TRUE(std::filesystem::is_empty(backups)) << "write " << n;
  }
  // The first epoch's backup: the next step's look finds the signal. The last epoch's backup,
  // written after Fit's last look, and the saved model: the signal carries over to the end.
  EXPECT_GE(preempted, 1);
  EXPECT_GE(late, 2);
  std::printf("[ preempt  ] SIGTERM in %d backup writes (143), %d writes after training\n",
              preempted, late);
  for (const std::string& dir : {reference, backups, model}) std::filesystem::remove_all(dir);
}

// Transfer learning's two Fits (the head on the frozen base, then fine-tuning), each with backups
// of its own, and the run's end (the test evaluation, --save): a run killed inside any of its
// atomic writes ends, started again, as the run never interrupted; one killed after training
// ended trains nothing again (the backups stay until the saved model is written).
TEST(TransferLearningCrashTest, RunsKilledInEitherPhaseOrAfterTrainingResumeExactly) {
  if (kSanitized) GTEST_SKIP() << "in the Release build only (CI's time)";
  const std::string images = TempPath("crash_images");
  ASSERT_NO_FATAL_FAILURE(train::recipes::testing::WriteDarkAndLightTree(images));
  const std::string base = TempPath("crash_base.onnx");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + ShellQuote(std::string(SLUICE_TEST_DATA)) +
                         "/../onnx/make_models.py small_base " + ShellQuote(base))
                            .c_str()),
            0);
  // 32 training images, 4 steps an epoch: the head 2 epochs, then fine-tuning 2.
  const std::vector<std::string> common = {
      "train", "--images",    images, "--base",  base,   "--freeze-base-epochs",
      "2",     "--epochs",    "4",    "--batch", "8",    "--image-size",
      "8",     "--optimizer", "adam", "--lr",    "0.01", "--fine-tune-lr",
      "0.001", "--seed",      "3",    "--json"};
  const std::string reference = TempPath("crash_tl_reference");
  const KillableRun straight = RunSluiceUntil(With(common, {"--save", reference}), "", 0);
  ASSERT_EQ(straight.exit_code, 0) << straight.out;
  ASSERT_FALSE(JsonField(straight.out, "test_loss").empty()) << straight.out;

  const std::string backups = TempPath("crash_tl_backups");
  const std::string model = TempPath("crash_tl_model");
  const std::vector<std::string> args = With(common, {"--backup-dir", backups, "--save", model});
  // A backup at each epoch's end: epochs 1 and 2 in head/, 1 and 2 of fine-tuning in fine-tune/.
  // Killed writing the 4th, a run resumes fine-tuning from its 1st epoch's backup (not the head's
  // Fit from it); killed in the save's writes, it resumes at the end of both Fits.
  constexpr int kBackupWrites = 4;
  int crashes = 0;
  for (int n = 1; n <= 20; ++n) {
    const KillableRun killed = RunSluiceUntil(args, absl::StrCat("atomic_file_commit:", n), 0);
    if (!killed.killed) {  // past the run's last write: it ended whole
      ASSERT_EQ(killed.exit_code, 0) << killed.out;
      EXPECT_GT(n, kBackupWrites + 1);
      break;
    }
    ++crashes;
    if (n > kBackupWrites) {
      EXPECT_FALSE(std::filesystem::is_empty(backups)) << "killed in the save, after training";
    }
    const KillableRun again = RunSluiceUntil(args, "", 0);
    ASSERT_EQ(again.exit_code, 0) << "killed in write " << n << ": " << again.out;
    EXPECT_EQ(JsonField(again.out, "test_loss"), JsonField(straight.out, "test_loss"))
        << "killed in write " << n;
    ExpectSameWeights(reference, model);
    if (n > kBackupWrites) {
      EXPECT_EQ(again.out.find("\"loss\": ["), std::string::npos)
          << "killed in write " << n << " (the save), the run trained again: " << again.out;
    }
    EXPECT_TRUE(std::filesystem::is_empty(backups)) << "killed in write " << n;
    std::filesystem::remove_all(model);
  }
  EXPECT_GT(crashes, kBackupWrites);
  for (const std::string& path : {images, base, reference, backups, model}) {
    std::filesystem::remove_all(path);
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, CrashResumeTest,
                         ::testing::Values("float32", "mixed_bfloat16"));

}  // namespace
}  // namespace sluice
