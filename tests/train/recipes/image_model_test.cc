#include "train/recipes/image_model.h"

#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::train::recipes {
namespace {

using ::testing::HasSubstr;

// A test set of one batch of three 6x10 RGB images, and 5 classes.
LabeledImages FiveClassesOf6x10() {
  Tensor images(DType::kFloat32, Shape{3, 6, 10, 3});
  for (int64_t i = 0; i < images.num_elements(); ++i) images.data<float>()[i] = 0.5f;
  Tensor labels(DType::kInt64, Shape{3});
  for (int i = 0; i < 3; ++i) labels.data<int64_t>()[i] = i;
  Dataset batches = Dataset::FromTensorSlices({images, labels}).Batch(3);
  return {.train = batches, .test = batches, .train_records = 3, .classes = 5};
}

TEST(ImageModelTest, TakesItsShapeFromTheFirstTestBatch) {
  absl::StatusOr<ImageModel> model = MakeImageModel({.name = "mlp"}, FiveClassesOf6x10());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->input_shape, (Shape{1, 6, 10, 3}));
  Tensor input(DType::kFloat32, Shape{2, 6, 10, 3});
  for (int64_t i = 0; i < input.num_elements(); ++i) input.data<float>()[i] = 0.25f;
  absl::StatusOr<Tensor> logits = model->module->Forward(input, /*training=*/false);
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_EQ(logits->shape(), (Shape{2, 5}));
}

TEST(ImageModelTest, TheSameSeedMakesTheSameModel) {
  Tensor input(DType::kFloat32, Shape{1, 6, 10, 3});
  for (int64_t i = 0; i < input.num_elements(); ++i) input.data<float>()[i] = 0.01f * (i % 7);
  float first[2][5];
  for (int seed : {0, 1}) {
    for (int again = 0; again < 2; ++again) {
      auto model =
          MakeImageModel({.name = "mlp", .seed = static_cast<uint64_t>(seed)}, FiveClassesOf6x10());
      ASSERT_TRUE(model.ok()) << model.status();
      absl::StatusOr<Tensor> logits = model->module->Forward(input, /*training=*/false);
      ASSERT_TRUE(logits.ok()) << logits.status();
      for (int c = 0; c < 5; ++c) {
        if (again == 0) first[seed][c] = logits->data<float>()[c];
        EXPECT_EQ(logits->data<float>()[c], first[seed][c]);
      }
    }
  }
  EXPECT_NE(first[0][0], first[1][0]);
}

TEST(ImageModelTest, AnEmptyTestSetOrAnUnknownModelFails) {
  LabeledImages empty = FiveClassesOf6x10();
  empty.test = empty.test.Take(0);
  empty.test_source = "nowhere.tfrecord";
  absl::StatusOr<ImageModel> none = MakeImageModel({}, empty);
  EXPECT_TRUE(absl::IsNotFound(none.status()));
  EXPECT_THAT(none.status().message(), HasSubstr("no test records in nowhere.tfrecord"));
  EXPECT_FALSE(MakeImageModel({.name = "vgg"}, FiveClassesOf6x10()).ok());
}

}  // namespace
}  // namespace sluice::train::recipes
