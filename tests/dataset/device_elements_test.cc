// tf.data's rule that prefetch_to_device is the pipeline's last step: a node that reads elements
// on the host is refused after a node that moved them to a device, when the iterator starts.

#include "dataset/device_elements.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/device.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

// A test double of train::data::PrefetchToDevice (which the dataset suite does not link): it
// says it moves its elements to `device`, and yields its input's (host) elements unchanged, so
// that the pipelines this rule lets through can be iterated here.
class ClaimsToMoveElements : public DatasetBase {
 public:
  ClaimsToMoveElements(std::shared_ptr<const DatasetBase> input, Device device)
      : DatasetBase("ClaimsToMoveElements", {std::move(input)}), device_(device) {}
  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    return inputs()[0]->MakeIterator(ctx);
  }
  std::optional<Device> MovesElementsTo() const override { return device_; }

 private:
  Device device_;
};

Dataset MovedTo(const Dataset& input, Device device = Device::Cuda(0)) {
  return Dataset(std::make_shared<ClaimsToMoveElements>(input.base(), device));
}

absl::Status FirstElementStatus(const Dataset& dataset) {
  return dataset.MakeIterator()->GetNext().status();
}

int64_t CountOnDevicePipeline(const Dataset& dataset) {
  std::unique_ptr<Iterator> it = dataset.MakeIterator();
  int64_t n = 0;
  while (true) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !e->has_value()) return n;
    ++n;
  }
}

TEST(DeviceElementsTest, EveryNodeThatReadsElementsIsRefusedAfterAMove) {
  const Dataset moved = MovedTo(Dataset::Range(8));
  const std::pair<std::string, Dataset> readers[] = {
      {"Map[2]", moved.Map([](Element e) -> absl::StatusOr<Element> { return e; })},
      {"Filter[2]", moved.Filter([](const Element&) -> absl::StatusOr<bool> { return true; })},
      {"Batch[2]", moved.Batch(2)},
      {"Shuffle[2]", moved.Shuffle(4)},
      {"Prefetch[2]", moved.Prefetch(2)},
      {"Cache[2]", moved.Cache()},
  };
  for (const auto& [name, dataset] : readers) {
    SCOPED_TRACE(name);
    const absl::Status s = FirstElementStatus(dataset);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(name + " reads its input's elements on the host, but "
                                              "ClaimsToMoveElements[1] put them on cuda:0"));
    EXPECT_THAT(s.message(), HasSubstr("the pipeline's last step"));
  }
}

TEST(DeviceElementsTest, NodesThatPassElementsOnWorkAndCarryTheDeviceToALaterReader) {
  const Dataset moved = MovedTo(Dataset::Range(8));
  // Take 5, repeated twice, less the first: 9 elements, none read on the host.
  const Dataset passed = moved.Take(5).Repeat(2).Skip(1).Enumerate();
  EXPECT_EQ(CountOnDevicePipeline(passed), 9);
  ASSERT_TRUE(ElementsDevice(*passed.base()).has_value());
  EXPECT_EQ(ElementsDevice(*passed.base())->device, Device::Cuda(0));
  EXPECT_EQ(ElementsDevice(*passed.base())->moved_by, moved.base().get());
  // A reader after them is refused all the same, naming the node that moved the elements.
  const absl::Status s = FirstElementStatus(passed.Batch(3));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("Batch[6] reads its input's elements on the host, but "
                                     "ClaimsToMoveElements[1] put them on cuda:0"));
}

TEST(DeviceElementsTest, ZipAndConcatenatePassAMovedInputOn) {
  const Dataset moved = MovedTo(Dataset::Range(4));
  const Dataset zipped = Dataset::Zip({moved, Dataset::Range(4)});
  EXPECT_EQ(CountOnDevicePipeline(zipped), 4);
  EXPECT_EQ(FirstElementStatus(zipped.Batch(2)).code(), absl::StatusCode::kInvalidArgument);
  const Dataset joined = Dataset::Range(3).Concatenate(moved);
  EXPECT_EQ(CountOnDevicePipeline(joined), 7);
  EXPECT_EQ(FirstElementStatus(joined.Filter([](const Element&) -> absl::StatusOr<bool> {
              return true;
            })).code(),
            absl::StatusCode::kInvalidArgument);
}

// A pipeline that Interleave, FlatMap or GroupByWindow builds at run time follows the same rule:
// it may not end on a device (its owner reads or holds the elements on the host), nor read
// device elements on the host itself. The error names the owner and the moving node.
TEST(DeviceElementsTest, PipelinesMadeWhileRunningAreCheckedToo) {
  auto to_device = [](Element e) -> absl::StatusOr<Dataset> {
    return MovedTo(Dataset::FromTensors(std::move(e)));
  };
  auto reads_on_host = [](Element e) -> absl::StatusOr<Dataset> {
    return MovedTo(Dataset::FromTensors(std::move(e))).Batch(1);
  };
  const std::pair<std::string, Dataset> owners[] = {
      {"Interleave[1]", Dataset::Range(4).Interleave(to_device, {.cycle_length = 2})},
      {"Interleave[1]",
       Dataset::Range(4).Interleave(to_device, {.cycle_length = 2, .num_parallel_calls = 2})},
      {"FlatMap[1]", Dataset::Range(4).FlatMap(to_device)},
      {"GroupByWindow[1]",
       Dataset::Range(4).GroupByWindow(
           [](const Element&) -> absl::StatusOr<int64_t> { return 0; },
           [](int64_t, Dataset window) -> absl::StatusOr<Dataset> { return MovedTo(window); }, 2)},
  };
  for (const auto& [name, dataset] : owners) {
    SCOPED_TRACE(name);
    const absl::Status s = FirstElementStatus(dataset);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(name + "'s function returned a pipeline whose elements "
                                              "ClaimsToMoveElements["));
    EXPECT_THAT(s.message(), HasSubstr("put on cuda:0"));
    EXPECT_THAT(s.message(), HasSubstr("apply ClaimsToMoveElements after " + name));
  }
  const absl::Status s = FirstElementStatus(Dataset::Range(4).FlatMap(reads_on_host));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("reads its input's elements on the host, but "
                                     "ClaimsToMoveElements["));
  // A host pipeline inside is fine.
  EXPECT_EQ(
      CountOnDevicePipeline(Dataset::Range(4).FlatMap([](Element e) -> absl::StatusOr<Dataset> {
        return Dataset::FromTensors(std::move(e)).Repeat(2);
      })),
      8);
}

// ChooseFromDatasets passes its datasets' elements on but reads its choices on the host.
TEST(DeviceElementsTest, ChooseFromDatasetsReadsOnlyItsChoicesOnTheHost) {
  const Dataset choices =
      Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>({0, 1, 0, 1})});
  const Dataset chosen =
      Dataset::ChooseFromDatasets({MovedTo(Dataset::Range(2)), Dataset::Range(10, 12)}, choices);
  EXPECT_EQ(CountOnDevicePipeline(chosen), 4);
  const absl::Status s = FirstElementStatus(
      Dataset::ChooseFromDatasets({Dataset::Range(2), Dataset::Range(10, 12)}, MovedTo(choices)));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("ChooseFromDatasets"));
}

// On the host, a "move" (PrefetchToDevice to the CPU) is a plain prefetch: anything may follow.
TEST(DeviceElementsTest, AMoveToTheHostRefusesNothing) {
  const Dataset moved = MovedTo(Dataset::Range(6), Device::Cpu());
  EXPECT_FALSE(ElementsDevice(*moved.base()).has_value());
  EXPECT_EQ(CountOnDevicePipeline(
                moved.Map([](Element e) -> absl::StatusOr<Element> { return e; }).Batch(4)),
            2);
  EXPECT_TRUE(CheckNoHostReadsOfDeviceElements(*Dataset::Range(3).Batch(2).base()).ok());
}

}  // namespace
}  // namespace sluice
