// Reads a TFRecord file of tf.train.Examples with the installed sluice
// package and prints how many records it holds and the first record's
// features: what a user's own project looks like.
#include <sluice/sluice.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE.tfrecord\n", argv[0]);
    return 2;
  }
  auto reader = sluice::TFRecordReader::Open(argv[1]);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
    return 1;
  }
  std::string record;
  int64_t count = 0;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    if (!more.ok()) {
      std::fprintf(stderr, "%s\n", more.status().ToString().c_str());
      return 1;
    }
    if (!*more) break;
    if (count == 0) {
      sluice::proto::Example example;
      if (example.ParseFromString(record)) {
        for (const auto& [name, feature] : example.features().feature()) {
          std::printf("feature %s\n", name.c_str());
        }
      }
    }
    ++count;
  }
  std::printf("%s: %lld records\n", argv[1], static_cast<long long>(count));
  return count > 0 ? 0 : 1;
}
