#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::Ints;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Dataset Choices(std::vector<int64_t> choices) {
  return Dataset::FromTensorSlices(Element{Tensor::FromVector(choices)});
}

TEST(ChooseFromDatasetsTest, ElementKComesFromInputChoiceK) {
  auto ds = Dataset::ChooseFromDatasets(
      {Dataset::Range(0, 100), Dataset::Range(100, 200), Dataset::Range(200, 300)},
      Choices({0, 1, 2, 2, 0, 1}));
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 100, 200, 201, 1, 101));
}

TEST(ChooseFromDatasetsTest, AnEndedInputStopsOrIsSkipped) {
  const std::vector<int64_t> choices = {0, 1, 0, 1, 0, 1};
  auto stop = Collect(Dataset::ChooseFromDatasets({Dataset::Range(0, 2), Dataset::Range(10, 20)},
                                                  Choices(choices)));
  ASSERT_TRUE(stop.ok());
  EXPECT_THAT(Ints(*stop), ElementsAre(0, 10, 1, 11));  // the third 0 ends it (tf.data's default)
  auto skip =
      Collect(Dataset::ChooseFromDatasets({Dataset::Range(0, 2), Dataset::Range(10, 20)},
                                          Choices(choices), {.stop_on_empty_dataset = false}));
  ASSERT_TRUE(skip.ok());
  EXPECT_THAT(Ints(*skip), ElementsAre(0, 10, 1, 11, 12));
}

TEST(ChooseFromDatasetsTest, BadChoicesNameTheirIndexAndValue) {
  auto out = Collect(Dataset::ChooseFromDatasets({Dataset::Range(0, 5), Dataset::Range(5, 9)},
                                                 Choices({1, 0, 2})));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("choice 2 is 2, outside [0, 2)"));
  auto wrong_type = Collect(Dataset::ChooseFromDatasets(
      {Dataset::Range(0, 5)}, Dataset::FromTensorSlices(Element{Tensor::FromVector<float>({0})})));
  EXPECT_THAT(std::string(wrong_type.status().message()), HasSubstr("must be an int64 scalar"));
}

TEST(ChooseFromDatasetsTest, CheckpointsResumeExactly) {
  std::vector<int64_t> choices;
  for (int64_t k = 0; k < 60; ++k) choices.push_back((k * 7 + k / 3) % 3);
  auto ds = Dataset::ChooseFromDatasets(
      {Dataset::Range(0, 15), Dataset::Range(100, 200), Dataset::Range(200, 300)}, Choices(choices),
      {.stop_on_empty_dataset = false});
  ExpectCheckpointsResumeExactly(ds, {0, 1, 14, 16, 30, 50});
}

TEST(ChooseFromDatasetsTest, EachInputIsANodeOfItsOwn) {
  auto ds = Dataset::ChooseFromDatasets({Dataset::Range(0, 100), Dataset::Range(100, 200)},
                                        Choices({0, 1, 1}));
  auto it = ds.MakeIterator();
  ASSERT_TRUE(testing::Drain(*it).ok());
  std::vector<std::string> names;
  for (const auto& s : it->Stats()) names.push_back(s.name);
  // The second input and the choices (inputs 1 and 2) are named under the node.
  EXPECT_THAT(names, ::testing::IsSupersetOf({"ChooseFromDatasets[1].1:Range[0]",
                                              "ChooseFromDatasets[1].2:FromTensorSlices[0]"}));
}

}  // namespace
}  // namespace sluice
