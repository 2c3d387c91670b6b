// Tests `sluice convert` and `sluice bench` by running the built binary on tiny hand-made inputs
// and reading the shards back with the library's reader and parser.

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "io/proto/example.pb.h"
#include "io/tfrecord_reader.h"
#include "ops/decode_jpeg.h"
#include "ops/encode_jpeg.h"
#include "tests/file_util.h"
#include "tests/tools/cli_test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using ::sluice::cli_test::CliResult;
using ::sluice::cli_test::RunSluice;
using ::sluice::cli_test::ShellQuote;
using ::sluice::cli_test::TempPath;
using ::sluice::cli_test::TestData;
using ::sluice::testing::ReadFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Record {
  std::string encoded;
  int64_t label, height, width;
  std::string format;
};

// An IDX file written byte by byte (big-endian header), gzipped.
void WriteIdx(const std::string& path, std::vector<uint32_t> dims, const std::string& data) {
  std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(d >> shift));
  }
  bytes += data;
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, bytes.data(), bytes.size()), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

std::vector<std::string> ReadRecords(const std::string& path) {
  std::vector<std::string> records;
  absl::StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return records;
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    records.push_back(record);
  }
  return records;
}

Record ParseRecord(const std::string& serialized) {
  FeatureSpec spec;
  spec.features = {{"image/encoded", FixedLenFeature{DType::kBytes, {}}},
                   {"image/class/label", FixedLenFeature{DType::kInt64, {}}},
                   {"image/height", FixedLenFeature{DType::kInt64, {}}},
                   {"image/width", FixedLenFeature{DType::kInt64, {}}},
                   {"image/format", FixedLenFeature{DType::kBytes, {}}}};
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(serialized, spec);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  return {(*t)[0].scalar<std::string>(), (*t)[1].scalar<int64_t>(), (*t)[2].scalar<int64_t>(),
          (*t)[3].scalar<int64_t>(), (*t)[4].scalar<std::string>()};
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The records of shards DIR/PREFIX-0000i-of-0000N in shard order, and each shard's count.
std::vector<Record> ReadShards(const std::string& dir, const std::string& prefix, int shards,
                               std::vector<size_t>* counts = nullptr) {
  std::vector<Record> records;
  for (int i = 0; i < shards; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "%s-%05d-of-%05d.tfrecord", prefix.c_str(), i, shards);
    std::vector<std::string> raw = ReadRecords(dir + "/" + name);
    if (counts != nullptr) counts->push_back(raw.size());
    for (const std::string& r : raw) records.push_back(ParseRecord(r));
  }
  return records;
}

// A source directory with Fashion-MNIST-named IDX files: 5 train and 3 test images of
// height x width, pixel (n, y, x) = (n * 40 + y * width + x) % 256 (a smooth ramp, which JPEG
// keeps close), label n % 10 scrambled a little.
std::string MakeMnistSource(int height, int width) {
  std::string dir = TempPath("mnist_src");
  fs::create_directories(dir);
  for (auto [prefix, count] : {std::pair{"train", 5}, std::pair{"t10k", 3}}) {
    std::string pixels, labels;
    for (int n = 0; n < count; ++n) {
      for (int i = 0; i < height * width; ++i) pixels.push_back(static_cast<char>(n * 40 + i * 3));
      labels.push_back(static_cast<char>((n * 7) % 10));
    }
    WriteIdx(
        dir + "/" + prefix + "-images-idx3-ubyte.gz",
        {static_cast<uint32_t>(count), static_cast<uint32_t>(height), static_cast<uint32_t>(width)},
        pixels);
    WriteIdx(dir + "/" + prefix + "-labels-idx1-ubyte.gz", {static_cast<uint32_t>(count)}, labels);
  }
  return dir;
}

uint8_t ExpectedPixel(int n, int i) { return static_cast<uint8_t>(n * 40 + i * 3); }

TEST(ConvertFashionMnistTest, RawPixelsExactly) {
  std::string source = MakeMnistSource(3, 2);
  std::string out = TempPath("mnist_raw");
  CliResult r = RunSluice("convert fashion-mnist --source " + ShellQuote(source) + " --out " +
                          ShellQuote(out) + " --shards 2 --format raw --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"splits\": [{\"name\": \"train\", \"examples\": 5, "));
  EXPECT_THAT(r.out, HasSubstr("{\"name\": \"test\", \"examples\": 3, "));
  // Exactly the shards and labels.txt: no temporary files left.
  EXPECT_THAT(
      DirEntries(out),
      ElementsAre("labels.txt", "test-00000-of-00002.tfrecord", "test-00001-of-00002.tfrecord",
                  "train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"));
  EXPECT_EQ(ReadFile(out + "/labels.txt"),
            "T-shirt/top\nTrouser\nPullover\nDress\nCoat\nSandal\nShirt\nSneaker\nBag\nAnkle "
            "boot\n");
  for (auto [prefix, count] : {std::pair{"train", 5}, std::pair{"test", 3}}) {
    std::vector<size_t> counts;
    std::vector<Record> records = ReadShards(out, prefix, 2, &counts);
    ASSERT_EQ(records.size(), static_cast<size_t>(count)) << prefix;
    // Contiguous blocks: 5 -> 3 + 2, 3 -> 2 + 1.
    EXPECT_EQ(counts[0], static_cast<size_t>((count + 1) / 2)) << prefix;
    for (int n = 0; n < count; ++n) {
      const Record& rec = records[n];
      EXPECT_EQ(rec.label, (n * 7) % 10);
      EXPECT_EQ(rec.height, 3);
      EXPECT_EQ(rec.width, 2);
      EXPECT_EQ(rec.format, "raw");
      ASSERT_EQ(rec.encoded.size(), 6u);
      for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(static_cast<uint8_t>(rec.encoded[i]), ExpectedPixel(n, i)) << n << " " << i;
      }
    }
  }
}

TEST(ConvertFashionMnistTest, JpegDecodesToThePixels) {
  std::string source = MakeMnistSource(16, 16);
  std::string out = TempPath("mnist_jpeg");
  CliResult r = RunSluice("convert fashion-mnist --source " + ShellQuote(source) + " --out " +
                          ShellQuote(out) + " --shards 1 --quality 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("train: 5 examples in 1 shards"));
  std::vector<Record> records = ReadShards(out, "train", 1);
  ASSERT_EQ(records.size(), 5u);
  for (int n = 0; n < 5; ++n) {
    EXPECT_EQ(records[n].format, "jpeg");
    EXPECT_EQ(records[n].label, (n * 7) % 10);
    absl::StatusOr<Tensor> image = DecodeJpeg(records[n].encoded);
    ASSERT_TRUE(image.ok()) << image.status();
    ASSERT_EQ(image->shape(), (Shape{16, 16, 1}));  // Grayscale JPEG.
    const uint8_t* p = image->data<uint8_t>();
    int worst = 0;
    for (int i = 0; i < 256; ++i) worst = std::max(worst, std::abs(p[i] - ExpectedPixel(n, i)));
    // The ramp wraps at 256 (a hard edge), which JPEG smears: allow a margin, not equality.
    EXPECT_LT(worst, 100) << n;
    int close = 0;
    for (int i = 0; i < 256; ++i) close += std::abs(p[i] - ExpectedPixel(n, i)) <= 6;
    EXPECT_GT(close, 200) << n;
  }
}

// Our keys have the same feature kinds as the independently written fixture's.
TEST(ConvertFashionMnistTest, KeysAndTypesMatchTheFixture) {
  std::string source = MakeMnistSource(4, 4);
  std::string out = TempPath("mnist_keys");
  ASSERT_EQ(RunSluice("convert fashion-mnist --source " + ShellQuote(source) + " --out " +
                      ShellQuote(out) + " --shards 1")
                .exit_code,
            0);
  proto::Example ours, fixture;
  ASSERT_TRUE(ours.ParseFromString(ReadRecords(out + "/train-00000-of-00001.tfrecord")[0]));
  ASSERT_TRUE(fixture.ParseFromString(ReadRecords(TestData("images3.tfrecord"))[0]));
  for (const char* key : {"image/encoded", "image/class/label", "image/format"}) {
    ASSERT_TRUE(ours.features().feature().contains(key)) << key;
    ASSERT_TRUE(fixture.features().feature().contains(key)) << key;
    EXPECT_EQ(ours.features().feature().at(key).kind_case(),
              fixture.features().feature().at(key).kind_case())
        << key;
  }
  EXPECT_EQ(ours.features().feature().at("image/format").bytes_list().value(0),
            fixture.features().feature().at("image/format").bytes_list().value(0));  // "jpeg"
  EXPECT_EQ(ours.features().feature().at("image/height").kind_case(), proto::Feature::kInt64List);
  EXPECT_EQ(ours.features().feature().at("image/width").kind_case(), proto::Feature::kInt64List);
}

TEST(ConvertFashionMnistTest, MissingSourceFailsNamingTheFile) {
  std::string out = TempPath("mnist_missing");
  CliResult r =
      RunSluice("convert fashion-mnist --source /nonexistent-dir --out " + ShellQuote(out));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent-dir/train-images-idx3-ubyte.gz"));
}

// A test split that fails (its files missing) takes the finished train split with it: the
// directory holds a whole conversion or none.
TEST(ConvertFashionMnistTest, AFailureInTheTestSplitLeavesNoTrainShards) {
  std::string source = MakeMnistSource(3, 2);
  fs::remove(source + "/t10k-labels-idx1-ubyte.gz");
  std::string out = TempPath("mnist_half");
  CliResult r = RunSluice("convert fashion-mnist --source " + ShellQuote(source) + " --out " +
                          ShellQuote(out) + " --shards 2 --format raw");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("t10k-labels-idx1-ubyte.gz"));
  // The folder it made goes too: nothing is left behind.
  EXPECT_FALSE(fs::exists(out)) << ::testing::PrintToString(DirEntries(out));
}

// A conversion that fails over an earlier one of the same shard count leaves that one as it was:
// its shards are staged under hidden names and renamed into place only once all are written
// (they were renamed over the earlier shards one by one, and removed at the failure: half a data
// set lost). What a killed conversion staged goes at the next whole one.
TEST(ConvertFashionMnistTest, AFailedConversionLeavesAnEarlierOneWhole) {
  const std::string good = MakeMnistSource(3, 2);
  const std::string out = TempPath("mnist_keep");
  const std::string convert = " --out " + ShellQuote(out) + " --shards 2 --format raw --source ";
  ASSERT_EQ(RunSluice("convert fashion-mnist" + convert + ShellQuote(good)).exit_code, 0);
  const std::vector<std::string> before = DirEntries(out);
  const std::vector<Record> train = ReadShards(out, "train", 2);

  const std::string bad = MakeMnistSource(2, 2);  // other images, and a test split that fails
  fs::remove(bad + "/t10k-labels-idx1-ubyte.gz");
  CliResult r = RunSluice("convert fashion-mnist" + convert + ShellQuote(bad));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("t10k-labels-idx1-ubyte.gz"));
  EXPECT_EQ(DirEntries(out), before);
  const std::vector<Record> kept = ReadShards(out, "train", 2);
  ASSERT_EQ(kept.size(), train.size());
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].encoded, train[i].encoded) << i;

  // Staged by a process that is gone (no PID is this large); a live one's would stay.
  std::ofstream(out + "/.train-00000-of-00002.tfrecord.staged-99999999") << "killed";
  std::ofstream(out + "/.train-00000-of-00002.tfrecord.staged-1") << "running";
  ASSERT_EQ(RunSluice("convert fashion-mnist" + convert + ShellQuote(good)).exit_code, 0);
  std::vector<std::string> after = before;
  after.insert(after.begin(), ".train-00000-of-00002.tfrecord.staged-1");
  EXPECT_EQ(DirEntries(out), after);
}

// Converting again with another shard count removes the earlier set, which the readers' glob
// train-*.tfrecord would otherwise read too (twice the data); files not named as shards stay.
TEST(ConvertFashionMnistTest, AConversionReplacesAnEarlierSetOfAnotherShardCount) {
  std::string source = MakeMnistSource(3, 2);
  std::string out = TempPath("mnist_again");
  const std::string convert = "convert fashion-mnist --source " + ShellQuote(source) + " --out " +
                              ShellQuote(out) + " --format raw --shards ";
  ASSERT_EQ(RunSluice(convert + "2").exit_code, 0);
  std::ofstream(out + "/train-notes.tfrecord") << "mine";
  std::ofstream(out + "/train-00000-of-00002.tfrecord.bak") << "mine";
  CliResult r = RunSluice(convert + "1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      DirEntries(out),
      ElementsAre("labels.txt", "test-00000-of-00001.tfrecord", "train-00000-of-00001.tfrecord",
                  "train-00000-of-00002.tfrecord.bak", "train-notes.tfrecord"));
  EXPECT_EQ(ReadShards(out, "train", 1).size(), 5u);
}

TEST(ConvertTest, UsageErrors) {
  EXPECT_EQ(RunSluice("convert").exit_code, 2);
  EXPECT_EQ(RunSluice("convert cifar --out x").exit_code, 2);
  EXPECT_EQ(RunSluice("convert fashion-mnist").exit_code, 2);  // No --out.
  EXPECT_EQ(RunSluice("convert fashion-mnist --out x --format png").exit_code, 2);
  EXPECT_EQ(RunSluice("convert fashion-mnist --out x --shards 0").exit_code, 2);
  EXPECT_EQ(RunSluice("convert images --out x").exit_code, 2);  // No ROOT.
  CliResult help = RunSluice("convert images --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--skip-bad"));
}

// The three photos of the fixture, as JPEG files.
std::vector<std::string> FixturePhotos() {
  std::vector<std::string> photos;
  FeatureSpec spec;
  spec.features = {{"image/encoded", FixedLenFeature{DType::kBytes, {}}}};
  for (const std::string& record : ReadRecords(TestData("images3.tfrecord"))) {
    absl::StatusOr<std::vector<Tensor>> t = ParseExample(record, spec);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) photos.push_back((*t)[0].scalar<std::string>());
  }
  return photos;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// ROOT/{dog,ant,cat}: 3 fixture photos and 3 small JPEGs made here; classes sort to
// ant=0, cat=1, dog=2. Returns path -> (bytes, label).
std::map<std::string, std::pair<std::string, int64_t>> MakeImageTree(const std::string& root) {
  std::map<std::string, std::pair<std::string, int64_t>> files;
  std::vector<std::string> photos = FixturePhotos();
  EXPECT_EQ(photos.size(), 3u);
  Tensor small(DType::kUint8, Shape{8, 12, 3});
  for (int i = 0; i < 8 * 12 * 3; ++i) small.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  absl::StatusOr<std::string> made = EncodeJpeg(small);
  EXPECT_TRUE(made.ok());
  const std::vector<std::pair<std::string, std::pair<std::string, int64_t>>> tree = {
      {"dog/p0.jpg", {photos[0], 2}},     {"cat/p1.jpg", {photos[1], 1}},
      {"cat/sub/p2.jpg", {photos[2], 1}}, {"ant/a.jpg", {*made, 0}},
      {"ant/b.JPEG", {*made, 0}},         {"dog/c.jpg", {*made, 2}}};
  for (const auto& [name, content] : tree) {
    WriteFile(root + "/" + name, content.first);
    files[name] = content;
  }
  return files;
}

// `sluice convert images ROOT --out OUT FLAGS`.
CliResult ConvertImages(const std::string& root, const std::string& out, const std::string& flags) {
  return RunSluice("convert images " + ShellQuote(root) + " --out " + ShellQuote(out) + " " +
                   flags);
}

TEST(ConvertImagesTest, CopiesJpegsWithLabelsAndSizes) {
  std::string root = TempPath("tree");
  auto files = MakeImageTree(root);
  WriteFile(root + "/.hidden/x.jpg", "not a jpeg, and not a class");
  // Not an image file: left out, as ImageDatasetFromDirectory leaves it out (the same listing).
  WriteFile(root + "/cat/notes.txt", "about the cats");
  std::string out = TempPath("images_out");
  CliResult r = ConvertImages(root, out, "--shards 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"examples\": 6, \"skipped\": 0, \"shards\": 4, \"classes\""));
  EXPECT_THAT(r.out, HasSubstr("{\"name\": \"ant\", \"examples\": 2}"));
  EXPECT_EQ(ReadFile(out + "/labels.txt"), "ant\ncat\ndog\n");
  EXPECT_EQ(DirEntries(out).size(), 5u);  // 4 shards + labels.txt, no temporary files.
  std::vector<size_t> counts;
  std::vector<Record> records = ReadShards(out, "train", 4, &counts);
  ASSERT_EQ(records.size(), 6u);
  EXPECT_THAT(counts, ElementsAre(2, 1, 2, 1));  // floor(k * 4 / 6) for k = 0..5
  // Each source file appears once, bytes unchanged, with its folder's label.
  std::multiset<std::pair<std::string, int64_t>> expected, got;
  for (const auto& [name, content] : files) expected.insert(content);
  for (const Record& rec : records) {
    got.insert({rec.encoded, rec.label});
    EXPECT_EQ(rec.format, "jpeg");
    absl::StatusOr<JpegHeader> header = ReadJpegHeader(rec.encoded);
    ASSERT_TRUE(header.ok());
    EXPECT_EQ(rec.height, header->height);
    EXPECT_EQ(rec.width, header->width);
  }
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(records.back().height > 0, true);
}

TEST(ConvertImagesTest, MoreShardsThanFilesWritesOneShardPerFile) {
  std::string root = TempPath("tree_few");
  MakeImageTree(root);  // 6 files
  std::string out = TempPath("few_out");
  CliResult r = ConvertImages(root, out, "--shards 10 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"shards\": 6"));
  EXPECT_THAT(r.err, HasSubstr("6 files: writing 6 shards, not 10 (one per file)"));
  std::vector<size_t> counts;
  EXPECT_EQ(ReadShards(out, "train", 6, &counts).size(), 6u);
  EXPECT_THAT(counts, ElementsAre(1, 1, 1, 1, 1, 1));
  EXPECT_EQ(DirEntries(out).size(), 7u);  // 6 shards + labels.txt: no empty shard.
}

TEST(ConvertImagesTest, OrderIsDeterministicPerSeed) {
  std::string root = TempPath("tree_seed");
  MakeImageTree(root);
  auto convert = [&](const std::string& seed) {
    std::string out = TempPath("seed_out");
    EXPECT_EQ(RunSluice("convert images " + ShellQuote(root) + " --out " + ShellQuote(out) +
                        " --shards 1 --seed " + seed)
                  .exit_code,
              0);
    return ReadFile(out + "/train-00000-of-00001.tfrecord");
  };
  const std::string a = convert("0");
  EXPECT_EQ(a, convert("0"));
  EXPECT_NE(a, convert("12345"));
}

TEST(ConvertImagesTest, BadJpegIsAnErrorOrSkipped) {
  std::string root = TempPath("tree_bad");
  MakeImageTree(root);
  WriteFile(root + "/cat/broken.jpg", "this is not a JPEG file");
  std::string out = TempPath("bad_out");
  CliResult r = ConvertImages(root, out, "--shards 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cat/broken.jpg: not a valid JPEG"));
  // A failed run leaves nothing: no shards, and not the folder it made.
  EXPECT_FALSE(fs::exists(out)) << ::testing::PrintToString(DirEntries(out));

  r = ConvertImages(root, out, "--shards 3 --skip-bad --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"examples\": 6, \"skipped\": 1"));
  EXPECT_THAT(r.err, HasSubstr("skipped"));
  EXPECT_EQ(ReadShards(out, "train", 3).size(), 6u);

  // A file that cannot be read (a dangling link) is skipped and counted too.
  fs::create_symlink(root + "/nowhere.jpg", root + "/dog/dangling.jpg");
  r = ConvertImages(root, out, "--shards 3 --skip-bad --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"examples\": 6, \"skipped\": 2"));
  EXPECT_THAT(r.err, HasSubstr("dog/dangling.jpg"));
}

// A JPEG cut short has a valid header: the whole of its data is read, with or without the
// re-encoding, so that training's decode does not meet it later.
TEST(ConvertImagesTest, TruncatedJpegIsAnErrorOrSkipped) {
  std::string root = TempPath("tree_truncated");
  auto files = MakeImageTree(root);
  const std::string& photo = files["dog/p0.jpg"].first;
  WriteFile(root + "/cat/cut.jpg", photo.substr(0, photo.size() / 2));
  for (const std::string flags : {"", " --restart-interval 4"}) {
    SCOPED_TRACE(flags);
    std::string out = TempPath("truncated_out");
    CliResult r = ConvertImages(root, out, "--shards 2" + flags);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("cat/cut.jpg: not a valid JPEG"));
    r = ConvertImages(root, out, "--shards 2 --skip-bad --json" + flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("\"examples\": 6, \"skipped\": 1"));
    EXPECT_THAT(r.err, HasSubstr("cat/cut.jpg"));
  }
}

// --restart-interval re-encodes each JPEG with restart markers: other bytes, the same pixels.
TEST(ConvertImagesTest, RestartIntervalReencodesLosslessly) {
  std::string root = TempPath("tree_restart");
  auto files = MakeImageTree(root);
  std::string out = TempPath("restart_out");
  CliResult r = ConvertImages(root, out, "--shards 2 --restart-interval 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"reencoded_with_restarts\": 6, \"kept_without_restarts\": 0"));
  std::multiset<std::pair<std::string, int64_t>> expected, got;
  for (const auto& [name, content] : files) {
    absl::StatusOr<Tensor> pixels = DecodeJpeg(content.first);
    ASSERT_TRUE(pixels.ok());
    expected.insert({std::string(static_cast<const char*>(pixels->raw_data()), pixels->byte_size()),
                     content.second});
  }
  std::vector<Record> records = ReadShards(out, "train", 2);
  ASSERT_EQ(records.size(), 6u);
  for (const Record& rec : records) {
    for (const auto& [name, content] : files) EXPECT_NE(rec.encoded, content.first) << name;
    EXPECT_NE(rec.encoded.find("\xFF\xDD"), std::string::npos);  // a DRI marker
    absl::StatusOr<Tensor> pixels = DecodeJpeg(rec.encoded);
    ASSERT_TRUE(pixels.ok()) << pixels.status();
    EXPECT_EQ(rec.height, pixels->dim(0));
    EXPECT_EQ(rec.width, pixels->dim(1));
    got.insert({std::string(static_cast<const char*>(pixels->raw_data()), pixels->byte_size()),
                rec.label});
  }
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(ConvertImages(root, out, "--restart-interval -1").exit_code, 2);
}

int64_t JsonInt(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\": (-?[0-9]+)");
  if (!std::regex_search(json, m, re)) {
    ADD_FAILURE() << key << " not in " << json;
    return -1;
  }
  return std::stoll(m[1]);
}

TEST(BenchTest, OneEpochCountsEveryImage) {
  std::string root = TempPath("tree_bench");
  const auto tree = MakeImageTree(root);
  std::string out = TempPath("bench_set");
  ASSERT_EQ(ConvertImages(root, out, "--shards 2").exit_code, 0);
  const std::string files = ShellQuote(out + "/train-*.tfrecord");
  CliResult r = RunSluice("bench --files " + files +
                          " --epochs 1 --json --batch 4 --image-size 32 --parallelism 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonInt(r.out, "elements"), 6);
  EXPECT_EQ(JsonInt(r.out, "batches"), 2);  // 4 + 2
  EXPECT_THAT(r.out, HasSubstr("\"elements_per_second\": "));
  EXPECT_THAT(r.out, HasSubstr("\"bytes_per_second\": "));
  EXPECT_THAT(r.out, HasSubstr("\"stages\": [{\"name\": "));
  EXPECT_THAT(r.out, HasSubstr("\"bottleneck\": \""));
  EXPECT_GT(JsonInt(r.out, "peak_rss_bytes"), 1 << 20);
  // The record bytes: every shard's records counted once.
  int64_t record_bytes = 0;
  for (const char* shard : {"/train-00000-of-00002.tfrecord", "/train-00001-of-00002.tfrecord"}) {
    for (const std::string& rec : ReadRecords(out + shard)) record_bytes += rec.size();
  }
  EXPECT_EQ(JsonInt(r.out, "bytes"), record_bytes);
  // A fixed parallelism is not tuned: no AUTOTUNE report.
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\"autotune\": ")));

  // The same images as loose files: every one read once, its bytes counted.
  r = RunSluice("bench --images " + ShellQuote(root) +
                " --epochs 1 --json --batch 4 --image-size 32 --parallelism 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonInt(r.out, "elements"), 6);
  int64_t file_bytes = 0;
  for (const auto& [name, content] : tree) file_bytes += content.first.size();
  EXPECT_EQ(JsonInt(r.out, "bytes"), file_bytes);

  // --snapshot: the first run decodes each record once (the second epoch reads the snapshot);
  // the next run decodes none.
  const std::string snapshot = TempPath("bench_snapshot");
  const std::string with_snapshot = "bench --files " + files +
                                    " --epochs 2 --json --batch 4 --image-size 16 --snapshot " +
                                    ShellQuote(snapshot);
  r = RunSluice(with_snapshot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonInt(r.out, "elements"), 12);
  EXPECT_EQ(JsonInt(r.out, "bytes"), record_bytes);
  int manifests = 0;  // one pipeline's snapshot, in its subdirectory
  for (const auto& f : std::filesystem::recursive_directory_iterator(snapshot)) {
    manifests += f.path().filename() == "manifest.pb";
  }
  EXPECT_EQ(manifests, 1);
  r = RunSluice(with_snapshot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonInt(r.out, "elements"), 12);
  EXPECT_EQ(JsonInt(r.out, "bytes"), 0);
  // The text says so, where it said "0.0 MB/s of records".
  r = RunSluice(with_snapshot.substr(0, with_snapshot.find(" --json")) +
                with_snapshot.substr(with_snapshot.find(" --json") + 7));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("12 images in "));
  EXPECT_THAT(r.out, HasSubstr("no records read (a snapshot or the cache served them)"));

  r = RunSluice("bench --files " + files +
                " --epochs 3 --cache --json --batch 4 --image-size 16 --autotune");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonInt(r.out, "elements"), 18);
  // --autotune runs the controller; its report is embedded.
  EXPECT_THAT(r.out, HasSubstr("\"autotune\": {\"elapsed_s\":"));
  EXPECT_THAT(r.out, HasSubstr("\"bottleneck_kind\":"));
  EXPECT_THAT(r.out, HasSubstr("\"cpu_budget\":"));

  r = RunSluice("bench --files " + files + " --epochs 1 --decode-only --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonInt(r.out, "elements"), 6);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\"autotune\": ")));  // Opt-in only.

  r = RunSluice("bench --files " + files + " --epochs 1 --autotune");  // The table.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("6 images in "));
  EXPECT_THAT(r.out, HasSubstr("bottleneck: "));
  EXPECT_THAT(r.out, HasSubstr("AUTOTUNE after "));
}

TEST(BenchTest, Errors) {
  EXPECT_EQ(RunSluice("bench").exit_code, 2);  // No --files.
  EXPECT_EQ(RunSluice("bench --files x --images y").exit_code, 2);
  CliResult missing = RunSluice("bench --images /nonexistent/dir --epochs 1");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/dir"));
  EXPECT_EQ(RunSluice("bench --files x --epochs 1 --seconds 2").exit_code, 2);
  EXPECT_EQ(RunSluice("bench --files x --parallelism 0").exit_code, 2);
  // More than 1024 calls in flight only buffer (100,000 took 2 GB and 8x --seconds).
  CliResult many = RunSluice("bench --files x --parallelism 1025");
  EXPECT_EQ(many.exit_code, 2);
  EXPECT_THAT(many.err, HasSubstr("--parallelism takes a count in [1, 1024]"));
  EXPECT_EQ(RunSluice("bench --files x --snapshot d --cache").exit_code, 2);
  EXPECT_EQ(RunSluice("bench --pipeline skewed --snapshot d").exit_code, 2);
  // Options the mode would ignore are refused.
  for (const char* ignored : {"--grid --seconds 5", "--grid --profile p", "--grid --autotune",
                              "--checkpoint-after 5 --seconds 3", "--checkpoint-after 5 --autotune",
                              "--decode-only --batch 8", "--decode-only --image-size 64"}) {
    CliResult refused = RunSluice(std::string("bench --files x ") + ignored);
    EXPECT_EQ(refused.exit_code, 2) << ignored;
    EXPECT_THAT(refused.err, HasSubstr("appl")) << ignored;  // "apply", "applies"
  }
  CliResult r =
      RunSluice("bench --files " + ShellQuote(TestData("small100.tfrecord")) + " --epochs 1");
  EXPECT_EQ(r.exit_code, 1);  // Records without image/encoded.
  EXPECT_THAT(r.err, HasSubstr("image/encoded"));
}

}  // namespace
}  // namespace sluice
