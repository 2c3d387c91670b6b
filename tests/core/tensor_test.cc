#include "core/tensor.h"

#include <cstdint>
#include <new>
#include <string>

#include "core/buffer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(TensorTest, AllocatesAlignedBufferOfTheRightSize) {
  for (DType d : {DType::kUint8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32}) {
    Tensor t(d, {3, 5});
    EXPECT_EQ(t.num_elements(), 15);
    EXPECT_EQ(t.byte_size(), 15 * DTypeSize(d)) << DTypeName(d);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u) << DTypeName(d);
    EXPECT_TRUE(t.device().is_cpu());
  }
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
}

TEST(TensorTest, ScalarAndFromVector) {
  Tensor s = Tensor::Scalar<int64_t>(42);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.scalar<int64_t>(), 42);

  Tensor v = Tensor::FromVector<float>({1.5f, -2.f, 3.f});
  EXPECT_EQ(v.shape(), Shape({3}));
  EXPECT_THAT(v.flat<float>(), testing::ElementsAre(1.5f, -2.f, 3.f));

  auto m = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->shape(), Shape({2, 3}));
  EXPECT_FALSE(Tensor::FromVector<int32_t>({1, 2, 3}, {2, 2}).ok());
}

TEST(TensorTest, ZerosIsZero) {
  Tensor z = Tensor::Zeros(DType::kFloat32, {4, 4});
  for (float f : z.flat<float>()) EXPECT_EQ(f, 0.f);
}

// A negative dimension throws, as new[] of a negative length; it allocated 64 bytes for a
// tensor whose byte count wrapped around.
TEST(TensorTest, ANegativeElementCountThrows) {
  EXPECT_THROW(Tensor(DType::kFloat32, Shape{4, -3}), std::bad_array_new_length);
  EXPECT_THROW(Buffer::Allocate(SIZE_MAX - 10), std::bad_alloc);
}

TEST(TensorTest, SliceSharesBufferAndSeesWrites) {
  auto t = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  ASSERT_TRUE(t.ok());
  auto s = t->Slice(1, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->shape(), Shape({2, 2}));
  EXPECT_TRUE(s->SharesBufferWith(*t));
  EXPECT_THAT(s->flat<int32_t>(), testing::ElementsAre(2, 3, 4, 5));
  s->flat<int32_t>()[0] = 99;  // A view, not a copy.
  EXPECT_EQ(t->flat<int32_t>()[2], 99);

  auto row = t->SubTensor(3);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->shape(), Shape({2}));
  EXPECT_THAT(row->flat<int32_t>(), testing::ElementsAre(6, 7));

  auto empty = t->Slice(2, 2);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_elements(), 0);

  EXPECT_EQ(t->Slice(3, 5).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(t->SubTensor(4).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(Tensor::Scalar<float>(1).Slice(0, 1).ok());
}

TEST(TensorTest, SliceOfSliceKeepsOffset) {
  auto t = Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5});
  auto a = t.Slice(2, 6);
  ASSERT_TRUE(a.ok());
  auto b = a->Slice(1, 3);
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(b->flat<int64_t>(), testing::ElementsAre(3, 4));
}

TEST(TensorTest, BytesTensorsHoldStringsAndSliceThem) {
  Tensor t = Tensor::FromVector<std::string>({"a", "", std::string(1000, 'x'), "d"});
  EXPECT_EQ(t.dtype(), DType::kBytes);
  EXPECT_EQ(t.byte_size(), 1002u);
  auto s = t.Slice(2, 4);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->flat<std::string>()[0].size(), 1000u);
  EXPECT_EQ(s->flat<std::string>()[1], "d");
  Tensor fresh(DType::kBytes, {3});
  for (const std::string& str : fresh.flat<std::string>()) EXPECT_TRUE(str.empty());
  // A slice keeps the strings alive after the parent goes away.
  Tensor survivor;
  {
    Tensor parent = Tensor::FromVector<std::string>({"keep", "me"});
    survivor = *parent.SubTensor(1);
  }
  EXPECT_EQ(survivor.scalar<std::string>(), "me");
}

TEST(TensorTest, ReshapeChecksCount) {
  auto t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6});
  auto r = t.Reshape({3, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->SharesBufferWith(t));
  EXPECT_EQ(r->shape(), Shape({3, 2}));
  EXPECT_EQ(t.Reshape({4}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, CloneIsDeep) {
  auto t = Tensor::FromVector<float>({1, 2});
  Tensor c = t.Clone();
  EXPECT_FALSE(c.SharesBufferWith(t));
  EXPECT_TRUE(c.Equals(t));
  c.flat<float>()[0] = 7;
  EXPECT_FALSE(c.Equals(t));
  Tensor sb = Tensor::FromVector<std::string>({"x", "y"}).Clone();
  EXPECT_EQ(sb.flat<std::string>()[1], "y");
}

TEST(TensorTest, CopyIntoRowFillsInPlace) {
  Tensor batch(DType::kInt32, {3, 2});
  ASSERT_TRUE(batch.CopyIntoRow(1, Tensor::FromVector<int32_t>({7, 8})).ok());
  EXPECT_EQ(batch.flat<int32_t>()[2], 7);
  EXPECT_EQ(batch.flat<int32_t>()[3], 8);
  EXPECT_EQ(batch.CopyIntoRow(0, Tensor::FromVector<int32_t>({1, 2, 3})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(batch.CopyIntoRow(0, Tensor::FromVector<float>({1, 2})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(batch.CopyIntoRow(3, Tensor::FromVector<int32_t>({1, 2})).code(),
            absl::StatusCode::kOutOfRange);
  Tensor strings(DType::kBytes, {2});
  ASSERT_TRUE(strings.CopyIntoRow(1, Tensor::Scalar<std::string>("hi")).ok());
  EXPECT_EQ(strings.flat<std::string>()[1], "hi");
}

TEST(TensorTest, FromBufferWrapsExternalMemory) {
  bool released = false;
  {
    static float storage[4] = {1, 2, 3, 4};
    auto buf = Buffer::Wrap(storage, sizeof(storage), Device::Cpu(),
                            [&released](void*) { released = true; });
    auto t = Tensor::FromBuffer(DType::kFloat32, {2}, buf, 2 * sizeof(float));
    ASSERT_TRUE(t.ok());
    EXPECT_THAT(t->flat<float>(), testing::ElementsAre(3.f, 4.f));
    EXPECT_FALSE(Tensor::FromBuffer(DType::kFloat32, {3}, buf, 2 * sizeof(float)).ok());
    EXPECT_FALSE(Tensor::FromBuffer(DType::kBytes, {1}, buf).ok());
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released);
}

TEST(TensorTest, DebugStringShowsDtypeShapeValues) {
  auto t = Tensor::FromVector<int64_t>({1, 2, 3}, {1, 3});
  EXPECT_EQ(t->DebugString(), "int64[1, 3] {1, 2, 3}");
  EXPECT_EQ(Tensor::FromVector<int32_t>({1, 2, 3}).DebugString(2), "int32[3] {1, 2, ...}");
  EXPECT_EQ(Tensor::Scalar<std::string>("a\n").DebugString(), "bytes[] {\"a\\n\"}");
}

TEST(DTypeTest, NamesRoundTrip) {
  for (DType d : {DType::kUint8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kBytes}) {
    auto back = DTypeFromName(DTypeName(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(DTypeFromName("float64").ok());
}

// scalar<T> checks its type and count in every build (it read the wrong bytes in Release).
TEST(TensorDeathTest, ScalarOfTheWrongTypeOrCountEndsTheProcessNamingBoth) {
  Tensor labels = *Tensor::FromVector<int64_t>({3}, Shape{});
  EXPECT_EQ(labels.scalar<int64_t>(), 3);
  EXPECT_DEATH(labels.scalar<float>(), "scalar<float32>\\(\\) on a tensor of int64, shape \\[\\]");
  Tensor two = *Tensor::FromVector<float>({1, 2}, Shape{2});
  EXPECT_DEATH(two.scalar<float>(), "tensor of float32, shape \\[2\\] \\(2 elements\\)");
}

}  // namespace
}  // namespace sluice
