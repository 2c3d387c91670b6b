#include "tools/train_command.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/json_writer.h"
#include "core/status_macros.h"
#include "tools/command_line.h"
#include "tools/device_option.h"
#include "tools/distributed_option.h"
#include "tools/option_table.h"
#include "tools/train_options.h"
#include "train/backend/compute_precision.h"
#include "train/callbacks/backup_and_restore.h"
#include "train/callbacks/callback.h"
#include "train/recipes/image_classifier.h"

namespace sluice::tools {
namespace {

using train::recipes::ImageClassifierOptions;
using Result = train::recipes::ImageClassifierResult;

// TrainImageClassifier, after its first checks in the options' words.
absl::StatusOr<Result> Train(const ImageClassifierOptions& run, distributed::Communicator* comm) {
  if (!run.device.is_cpu()) SLUICE_RETURN_IF_ERROR(CheckDeviceAvailable(run.device));
  SLUICE_RETURN_IF_ERROR(
      Prefixed(absl::StrCat("--precision ", train::backend::PrecisionName(run.precision), ": "),
               train::backend::CheckPrecisionSupported(run.device, run.precision)));
  return train::recipes::TrainImageClassifier(run, comm);
}

// What a resumed run adds to "N epochs": how many it ran itself.
std::string ResumedNote(const Result& result) {
  const int64_t ran = static_cast<int64_t>(result.history.epochs.size());
  if (ran == result.epochs_completed) return "";
  if (ran == 0) return " (all restored: none left to train)";
  return absl::StrCat(" (", ran, " in this run)");
}

void PrintJson(const TrainConfig& config, const Result& result) {
  JsonWriter json;
  json.BeginObject();
  TrainOptions().WriteJson(config, json);
  auto number = [&json](const char* key, double value) {
    json.Key(key);
    json.Double(value);
  };
  for (auto [key, value] : {std::pair<const char*, int64_t>{"train_records", result.train_records},
                            {"epochs_trained", result.epochs_completed},
                            {"epochs_this_run", static_cast<int64_t>(result.history.epochs.size())},
                            {"ranks", result.ranks},
                            {"global_batch", config.run.batch_size * result.ranks}}) {
    json.Key(key);
    json.Int(value);
  }
  if (result.ranks > 1) number("allreduce_exposed_share", result.allreduce_exposed_share);
  number("test_accuracy", train::callbacks::LogValue(result.test, "accuracy").value_or(0));
  number("test_loss", train::callbacks::LogValue(result.test, "loss").value_or(0));
  number("train_images_per_second", result.images_per_second);
  number("input_wait_share", result.input_wait_share);
  number("train_seconds", result.train_seconds);
  number("train_max_rss_mb", result.train_max_rss_mb);
  number("train_peak_tensor_mb", result.train_peak_tensor_mb);
  number("train_peak_tensor_held_mb", result.train_peak_tensor_held_mb);
  json.Key("skipped_records");
  json.Int(result.skipped_records);
  json.Key("skipped_train_records");
  json.Int(result.skipped_train_records);
  if (result.skipped_records > 0) {
    json.Key("first_skipped");
    json.String(result.first_skipped);
  }
  json.Key("history");
  json.BeginObject();
  for (const auto& [name, values] : result.history.history) {
    json.Key(name);
    json.BeginArray();
    for (double v : values) json.Double(v);
    json.EndArray();
  }
  json.EndObject();
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
}

// Prints the result as one JSON object or one line, and the skipped records to stderr.
void ReportResult(const TrainConfig& config, const Result& result) {
  if (result.skipped_records > 0) {
    const int64_t test = result.skipped_records - result.skipped_train_records;
    std::fprintf(stderr,
                 "sluice train: skipped %lld unreadable record%s (%lld training, %lld test); the "
                 "first: %s\n",
                 static_cast<long long>(result.skipped_records),
                 result.skipped_records == 1 ? "" : "s",
                 static_cast<long long>(result.skipped_train_records), static_cast<long long>(test),
                 result.first_skipped.c_str());
  }
  if (config.json) return PrintJson(config, result);
  const double loss = train::callbacks::LogValue(result.test, "loss").value_or(0);
  std::printf(
      "test accuracy %.2f%% (loss %s) | %s, %lld epoch%s%s of %lld images%s | train %.1f "
      "images/s | input wait %.1f%% of step time%s\n",
      100 * train::callbacks::LogValue(result.test, "accuracy").value_or(0),
      std::isnan(loss) ? "nan" : absl::StrFormat("%.4f", loss).c_str(), config.run.model.c_str(),
      static_cast<long long>(result.epochs_completed), result.epochs_completed == 1 ? "" : "s",
      ResumedNote(result).c_str(), static_cast<long long>(result.train_records),
      // The listed count includes those skipped: say so, or 21 reads as 21 trained on.
      result.skipped_train_records > 0
          ? absl::StrCat(" (", result.skipped_train_records, " unreadable, skipped)").c_str()
          : "",
      result.images_per_second, 100 * result.input_wait_share,
      result.ranks > 1
          ? absl::StrCat(" | ", result.ranks, " ranks, all-reduce exposed ",
                         static_cast<int>(100 * result.allreduce_exposed_share + 0.5), "%")
                .c_str()
          : "");
}

}  // namespace

int RunTrain(int argc, char** argv) {
  CommandLine command_line(
      "sluice train",
      "Trains an image classifier on the TFRecords that `sluice convert fashion-mnist` writes\n"
      "(--data DIR: DIR/train-*.tfrecord, DIR/test-*.tfrecord), fed by the input pipeline\n"
      "(shuffle, JPEG decode, [flip + pad-crop], batch, prefetch), or on a folder of class\n"
      "folders of JPEGs (--images DIR, split into training and test subsets), then prints the\n"
      "test accuracy and the training throughput in images/s; --save DIR keeps the model for\n"
      "`sluice predict`. The loss is sparse softmax cross-entropy (--label-smoothing).\n"
      "Data-parallel over processes and machines: mpirun -np N sluice train --distributed ...");
  TrainConfig config;
  if (std::optional<int> exit =
          TrainOptions().ParseOrReport(command_line, argc, argv, config, CheckTrainConfig)) {
    return *exit;
  }
  std::optional<DistributedRun> job;
  if (config.distributed) {
    job = DistributedRun::Start("sluice train", absl::Seconds(config.collective_timeout),
                                config.run.device);
    if (!job) return kExitFailure;
  }
  if (!job || job->rank() == 0) WarnOfMoreThreadsThanCores(config);
  absl::StatusOr<Result> result = Train(config.run, job ? job->collectives() : nullptr);
  if (!result.ok() && train::callbacks::IsPreemption(result.status())) {
    // Every rank stopped after the same step and the backup is written: no abort.
    if (!job || job->rank() == 0) ReportFailure("sluice train", result.status(), config.json);
    return kExitPreempted;
  }
  if (!result.ok()) {
    if (job) return job->Fail("sluice train", result.status());
    return ReportFailure("sluice train", result.status(), config.json);
  }
  if (job && job->rank() != 0) return kExitOk;  // rank 0 reports for the job
  ReportResult(config, *result);
  return kExitOk;
}

}  // namespace sluice::tools
