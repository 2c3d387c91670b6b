// ElementSpec itself, the element_spec of every op, declared output signatures, and restores of
// checkpoints whose buffered elements are of another type than the node buffers (DataLoss naming
// the node and the component).
#include "dataset/element_spec.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "dataset/dataset_base.h"
#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::Ints;
using ::sluice::testing::ScopedTempDir;
using ::testing::HasSubstr;

constexpr int64_t kAny = PartialShape::kUnknownDim;

const ElementSpec kInt64Scalar{{DType::kInt64, {}}};

Element Int(int64_t v) { return {Tensor::Scalar<int64_t>(v)}; }

Element Int64s(std::vector<int64_t> values, Shape shape) {
  return {Tensor::FromVector(values, std::move(shape)).value()};
}

// `ds`'s element_spec as a string; when `iterate`, every element is also checked against it
// (Collect does).
std::string SpecOf(const Dataset& ds, bool iterate = true) {
  if (iterate) {
    absl::StatusOr<std::vector<Element>> all = Collect(ds);
    EXPECT_TRUE(all.ok()) << ds.DebugString() << ": " << all.status();
  }
  return ds.element_spec().DebugString();
}

// ---- ElementSpec ----

TEST(ElementSpecTest, UnknownMatchesEverything) {
  const ElementSpec unknown;
  EXPECT_FALSE(unknown.known());
  EXPECT_EQ(unknown.DebugString(), "<unknown>");
  EXPECT_TRUE(unknown.Check({}).ok());
  EXPECT_TRUE(unknown.Check({Tensor::Scalar<float>(1), Tensor::Scalar<std::string>("a")}).ok());
  EXPECT_TRUE(unknown.IsCompatibleWith(kInt64Scalar));
}

TEST(ElementSpecTest, CheckNamesTheComponentAndBothSpecs) {
  const ElementSpec spec{{DType::kInt64, {}}, {DType::kFloat32, {kAny, 3}}};
  EXPECT_EQ(spec.DebugString(), "(int64[], float32[?, 3])");
  EXPECT_TRUE(spec.Check({Tensor::Scalar<int64_t>(1), Tensor(DType::kFloat32, Shape{7, 3})}).ok());
  const absl::Status dtype =
      spec.Check({Tensor::Scalar<int64_t>(1), Tensor(DType::kInt32, Shape{7, 3})});
  EXPECT_EQ(dtype.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dtype.message(), "component 1 is int32[7, 3], expected float32[?, 3]");
  EXPECT_EQ(
      spec.Check({Tensor::Scalar<int64_t>(1), Tensor(DType::kFloat32, Shape{7, 4})}).message(),
      "component 1 is float32[7, 4], expected float32[?, 3]");
  EXPECT_EQ(spec.Check(Int(1)).message(), "the element has 1 components, expected 2");
  // A known spec of no components is the empty element's.
  EXPECT_TRUE(ElementSpec(std::vector<TensorSpec>{}).Check({}).ok());
  EXPECT_FALSE(ElementSpec(std::vector<TensorSpec>{}).Check(Int(1)).ok());
}

TEST(ElementSpecTest, FromElementZippedBatchedAndUnbatched) {
  const ElementSpec spec = ElementSpec::FromElement(
      {Tensor::Scalar<std::string>("a"), Tensor(DType::kUint8, Shape{2, 3})});
  EXPECT_EQ(spec.DebugString(), "(bytes[], uint8[2, 3])");
  EXPECT_EQ(ElementSpec::Zipped({kInt64Scalar, spec}).DebugString(),
            "(int64[], bytes[], uint8[2, 3])");
  EXPECT_FALSE(ElementSpec::Zipped({kInt64Scalar, ElementSpec()}).known());
  EXPECT_EQ(spec.Batched(4).DebugString(), "(bytes[4], uint8[4, 2, 3])");
  EXPECT_EQ(spec.Batched(kAny).Unbatched(), spec);
  EXPECT_FALSE(spec.Unbatched().known()) << "a scalar has no dimension to unbatch";
  const ElementSpec any_rank{{DType::kInt64, PartialShape::UnknownRank()}};
  EXPECT_EQ(any_rank.Batched(3), any_rank);
  EXPECT_EQ(any_rank.Unbatched(), any_rank);
}

TEST(ElementSpecTest, MostSpecificCompatibleSpec) {
  const ElementSpec a{{DType::kInt64, {2}}, {DType::kBytes, {}}};
  const ElementSpec b{{DType::kInt64, {3}}, {DType::kBytes, {}}};
  EXPECT_EQ(a.MostSpecificCompatibleSpec(a), a);
  EXPECT_EQ(a.MostSpecificCompatibleSpec(b).DebugString(), "(int64[?], bytes[])");
  EXPECT_TRUE(a.IsCompatibleWith(a.MostSpecificCompatibleSpec(b)));
  EXPECT_FALSE(a.IsCompatibleWith(b));
  EXPECT_FALSE(a.MostSpecificCompatibleSpec(kInt64Scalar).known());
  EXPECT_FALSE(a.MostSpecificCompatibleSpec(ElementSpec()).known());
  const ElementSpec other_dtype{{DType::kInt32, {2}}, {DType::kBytes, {}}};
  EXPECT_FALSE(a.MostSpecificCompatibleSpec(other_dtype).known());
}

// ---- The specs of the ops ----

TEST(ElementSpecTest, Sources) {
  EXPECT_EQ(SpecOf(Dataset::Range(3)), "(int64[])");
  EXPECT_EQ(SpecOf(Dataset::FromTensors(
                {Tensor::FromVector<int64_t>({1, 2}), Tensor::Scalar<std::string>("a")})),
            "(int64[2], bytes[])");
  EXPECT_EQ(SpecOf(Dataset::FromTensorSlices(
                {Tensor(DType::kInt64, Shape{5, 3}), Tensor(DType::kFloat32, Shape{5})})),
            "(int64[3], float32[])");
  // An element that cannot be sliced yields nothing: there is nothing to describe.
  EXPECT_EQ(SpecOf(Dataset::FromTensorSlices(Int(1)), false), "<unknown>");
  auto generator = [] {
    return [n = 0]() mutable -> absl::StatusOr<std::optional<Element>> {
      if (n == 3) return std::nullopt;
      return Int(n++);
    };
  };
  EXPECT_EQ(SpecOf(Dataset::FromGenerator(generator)), "<unknown>");
  EXPECT_EQ(SpecOf(Dataset::FromGenerator(generator, kInt64Scalar)), "(int64[])");

  ScopedTempDir dir;
  const std::string csv = dir.Write("a.csv", "1,x\n2,y\n3,z\n");
  EXPECT_EQ(SpecOf(Dataset::ListFiles(dir.File("*.csv"))), "(bytes[])");
  EXPECT_EQ(SpecOf(Dataset::TextLine(csv)), "(bytes[])");
  EXPECT_EQ(SpecOf(Dataset::TFRecord(dir.File("none.tfrecord")), false), "(bytes[])");
  const std::vector<Tensor> defaults = {Tensor::Scalar<int32_t>(0),
                                        Tensor::Scalar<std::string>("")};
  EXPECT_EQ(SpecOf(Dataset::Csv({csv}, defaults)), "(int32[], bytes[])");
  EXPECT_EQ(SpecOf(Dataset::Csv({csv}, defaults, {.batch_size = 2})), "(int32[?], bytes[?])");
  EXPECT_EQ(SpecOf(Dataset::Csv({csv}, {}), false), "<unknown>");
  EXPECT_EQ(SpecOf(Dataset::Load(dir.File("nothing saved")), false), "<unknown>");
}

TEST(ElementSpecTest, OpsThatPassElementsOnKeepTheirInputsSpec) {
  ScopedTempDir dir;
  const Dataset in = Dataset::FromTensors(Int64s({1, 2}, {2})).Repeat(3);
  for (const Dataset& ds :
       {in.Filter([](const Element&) -> absl::StatusOr<bool> { return true; }), in.Cache(),
        in.Cache(dir.File("cache")), in.Shuffle(4, {.seed = 1}), in.Prefetch(2), in.Repeat(2),
        in.Take(2), in.Skip(1), in.Shard(2, 0), in.IgnoreErrors(), in.WithOptions({.seed = 3}),
        in.Snapshot(dir.File("snapshot"))}) {
    EXPECT_EQ(SpecOf(ds), "(int64[2])") << ds.DebugString();
  }
}

TEST(ElementSpecTest, FunctionsMakeItUnknownUnlessDeclared) {
  const Dataset in = Dataset::Range(6);
  auto same = [](Element e) -> absl::StatusOr<Element> { return e; };
  auto inner = [](Element e) -> absl::StatusOr<Dataset> { return Dataset::Range(2); };
  auto key = [](const Element& e) -> absl::StatusOr<int64_t> { return e[0].scalar<int64_t>() % 2; };
  auto reduce = [](int64_t, Dataset window) -> absl::StatusOr<Dataset> { return window; };
  auto scan = [](Element s, Element e) -> absl::StatusOr<std::pair<Element, Element>> {
    return std::make_pair(s, e);
  };
  EXPECT_EQ(SpecOf(in.Map(same)), "<unknown>");
  EXPECT_EQ(SpecOf(in.Map(same, {.num_parallel_calls = 2})), "<unknown>");
  EXPECT_EQ(SpecOf(in.FlatMap(inner)), "<unknown>");
  EXPECT_EQ(SpecOf(in.Interleave(inner, {.cycle_length = 2})), "<unknown>");
  EXPECT_EQ(SpecOf(in.GroupByWindow(key, reduce, 2)), "<unknown>");
  EXPECT_EQ(SpecOf(in.Scan(Int(0), scan)), "<unknown>");
  // Unknown flows on: what passes an unknown element on knows nothing either.
  EXPECT_EQ(SpecOf(in.Map(same).Batch(2).Prefetch(1)), "<unknown>");

  EXPECT_EQ(SpecOf(in.Map(same, {.output_signature = kInt64Scalar})), "(int64[])");
  EXPECT_EQ(SpecOf(in.Map(same, {.num_parallel_calls = 2, .output_signature = kInt64Scalar})),
            "(int64[])");
  EXPECT_EQ(SpecOf(in.FlatMap(inner, kInt64Scalar)), "(int64[])");
  EXPECT_EQ(SpecOf(in.Interleave(inner, {.cycle_length = 2, .output_signature = kInt64Scalar})),
            "(int64[])");
  EXPECT_EQ(SpecOf(in.GroupByWindow(key, reduce, 2, kInt64Scalar)), "(int64[])");
  EXPECT_EQ(SpecOf(in.Scan(Int(0), scan, kInt64Scalar)), "(int64[])");
  // And known again downstream.
  EXPECT_EQ(SpecOf(in.Map(same, {.output_signature = kInt64Scalar}).Batch(2).Prefetch(1)),
            "(int64[?])");
  // The declaration is not part of the description: checkpoints of the pipeline without it
  // still restore, now checked.
  EXPECT_EQ(in.Map(same, {.output_signature = kInt64Scalar}).DebugString(),
            in.Map(same).DebugString());
}

TEST(ElementSpecTest, BatchingOps) {
  const Dataset ints = Dataset::Range(10);
  EXPECT_EQ(SpecOf(ints.Batch(4)), "(int64[?])");
  EXPECT_EQ(SpecOf(ints.Batch(4, {.drop_remainder = true})), "(int64[4])");
  EXPECT_EQ(SpecOf(ints.Batch(4, {.drop_remainder = true}).Unbatch()), "(int64[])");
  EXPECT_EQ(SpecOf(ints.Batch(4).Rebatch(3)), "(int64[?])");
  EXPECT_EQ(SpecOf(ints.Batch(4).Rebatch(3, true)), "(int64[3])");
  EXPECT_EQ(SpecOf(ints.Unbatch(), false), "<unknown>") << "a scalar cannot be unbatched";
  EXPECT_EQ(SpecOf(ints.Window(3, {.shift = 2})), "(int64[?])");
  EXPECT_EQ(SpecOf(ints.Window(3, {.shift = 2, .drop_remainder = true})), "(int64[3])");

  // Rows of [3] in PaddedBatch: padded to the longest (all 3), or to a given size.
  const Dataset rows = Dataset::FromTensorSlices({Tensor(DType::kInt64, Shape{5, 3})});
  EXPECT_EQ(SpecOf(rows.PaddedBatch(2)), "(int64[?, 3])");
  EXPECT_EQ(SpecOf(rows.PaddedBatch(2, {.padded_shapes = {{-1}}})), "(int64[?, 3])");
  EXPECT_EQ(SpecOf(rows.PaddedBatch(2, {.padded_shapes = {{6}}})), "(int64[?, 6])");
  EXPECT_EQ(SpecOf(rows.PaddedBatch(2, {.padded_shapes = {{6}}, .drop_remainder = true})),
            "(int64[2, 6])");
  // Rows of unknown length: padded to the longest of each batch.
  const Dataset ragged = Dataset::Range(1, 5).Map(
      [](Element e) -> absl::StatusOr<Element> {
        return Element{Tensor(DType::kInt64, Shape{e[0].scalar<int64_t>()})};
      },
      {.output_signature = {{DType::kInt64, {kAny}}}});
  EXPECT_EQ(SpecOf(ragged.PaddedBatch(2)), "(int64[?, ?])");
  EXPECT_EQ(SpecOf(ragged.PaddedBatch(2, {.padded_shapes = {{8}}})), "(int64[?, 8])");
  // Padded shapes that cannot fit make every batch an error.
  EXPECT_EQ(SpecOf(rows.PaddedBatch(2, {.padded_shapes = {{6, 1}}}), false), "<unknown>");
  EXPECT_EQ(
      SpecOf(ragged.BucketBySequenceLength(
          [](const Element& e) -> absl::StatusOr<int64_t> { return e[0].dim(0); }, {3}, {2, 2})),
      "(int64[?, ?])");
}

TEST(ElementSpecTest, OpsThatCombineInputs) {
  const Dataset ints = Dataset::Range(4);
  const Dataset pairs = Dataset::FromTensors(Int64s({1, 2}, {2})).Repeat(4);
  const Dataset triples = Dataset::FromTensors(Int64s({1, 2, 3}, {3})).Repeat(4);
  const Dataset words = Dataset::FromTensors({Tensor::Scalar<std::string>("w")}).Repeat(4);
  const Dataset unknown = ints.Map([](Element e) -> absl::StatusOr<Element> { return e; });
  EXPECT_EQ(SpecOf(ints.Zip(words)), "(int64[], bytes[])");
  EXPECT_EQ(SpecOf(Dataset::Zip({ints, pairs, words})), "(int64[], int64[2], bytes[])");
  EXPECT_EQ(SpecOf(ints.Zip(unknown)), "<unknown>");
  EXPECT_EQ(SpecOf(ints.Enumerate()), "(int64[], int64[])");
  EXPECT_EQ(SpecOf(words.Enumerate(3)), "(int64[], bytes[])");
  EXPECT_EQ(SpecOf(unknown.Enumerate()), "<unknown>");
  EXPECT_EQ(SpecOf(pairs.Concatenate(pairs)), "(int64[2])");
  EXPECT_EQ(SpecOf(pairs.Concatenate(triples)), "(int64[?])");
  // Ranks that differ leave the rank unknown (tf.TensorShape(None)); dtypes that differ, the
  // whole spec.
  EXPECT_EQ(SpecOf(ints.Concatenate(pairs)), "(int64<unknown>)");
  EXPECT_EQ(SpecOf(ints.Concatenate(words), false), "<unknown>");  // its elements are errors
  EXPECT_EQ(SpecOf(Dataset::SampleFromDatasets({pairs, triples}, {1, 1}, {.seed = 1})),
            "(int64[?])");
  EXPECT_EQ(SpecOf(Dataset::ChooseFromDatasets({pairs, triples}, Dataset::Range(2))), "(int64[?])");
  EXPECT_EQ(SpecOf(Dataset::ChooseFromDatasets({pairs, words}, Dataset::Range(2))), "<unknown>");
}

// ---- Declared output signatures are checked where the elements are made ----

TEST(ElementSpecTest, AnElementThatBreaksItsDeclarationIsAnErrorNamingTheNode) {
  auto words = [](Element e) -> absl::StatusOr<Element> {
    if (e[0].scalar<int64_t>() == 2) return Element{Tensor::Scalar<std::string>("two")};
    return e;
  };
  for (int parallel : {1, 2}) {
    const Dataset ds = Dataset::Range(5).Map(
        words, {.num_parallel_calls = parallel, .output_signature = kInt64Scalar});
    auto it = ds.MakeIterator();
    absl::StatusOr<std::vector<Element>> got = Drain(*it);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(),
                HasSubstr("Map[1] at element 2: the element does not match the declared "
                          "output_signature (int64[]): component 0 is bytes[], expected int64[]"));
    // In the element's place, like any error: IgnoreErrors goes on with the next.
    absl::StatusOr<std::vector<Element>> skipped = Collect(ds.IgnoreErrors());
    ASSERT_TRUE(skipped.ok()) << skipped.status();
    EXPECT_EQ(Ints(*skipped), (std::vector<int64_t>{0, 1, 3, 4}));
  }
  const Dataset generated = Dataset::FromGenerator(
      [] { return []() -> absl::StatusOr<std::optional<Element>> { return Int64s({1}, {1}); }; },
      kInt64Scalar);
  auto it = generated.MakeIterator();
  absl::StatusOr<std::optional<Element>> first = it->GetNext();
  ASSERT_FALSE(first.ok());
  EXPECT_THAT(first.status().message(), HasSubstr("FromGenerator[0] at element 0"));
  EXPECT_THAT(first.status().message(), HasSubstr("component 0 is int64[1], expected int64[]"));
}

// ---- Restores check every buffered element against the spec of what the node buffers ----

// The state of the node named `node` in a checkpoint's tree, or nullptr.
proto::IteratorStateProto* FindState(proto::IteratorStateProto* state, const std::string& node) {
  if (state->node() == node) return state;
  for (proto::IteratorStateProto& in : *state->mutable_inputs()) {
    if (proto::IteratorStateProto* found = FindState(&in, node)) return found;
  }
  return nullptr;
}

// `checkpoint` with `element` as the first element the node `node` buffers: in place of the first
// one it saved (whole or as a source), or the only one when it saved none.
std::string WithBuffered(const std::string& checkpoint, const std::string& node,
                         const Element& element) {
  proto::IteratorCheckpoint ckpt;
  EXPECT_TRUE(ckpt.ParseFromString(checkpoint));
  proto::IteratorStateProto* state = FindState(ckpt.mutable_root(), node);
  EXPECT_NE(state, nullptr) << "no " << node << " in " << ckpt.DebugString();
  if (state == nullptr) return checkpoint;
  proto::BufferedResult* b =
      state->buffer_size() > 0 ? state->mutable_buffer(0) : state->add_buffer();
  b->Clear();
  ElementToProto(element, b->mutable_element());
  return ckpt.SerializeAsString();
}

// `checkpoint` with `element` in the blob `key` of the node `node` (an input element kept for an
// inner pipeline).
std::string WithBlobElement(const std::string& checkpoint, const std::string& node,
                            const std::string& key, const Element& element) {
  proto::IteratorCheckpoint ckpt;
  EXPECT_TRUE(ckpt.ParseFromString(checkpoint));
  proto::IteratorStateProto* state = FindState(ckpt.mutable_root(), node);
  EXPECT_NE(state, nullptr) << "no " << node << " in " << ckpt.DebugString();
  if (state == nullptr) return checkpoint;
  EXPECT_TRUE(state->blobs().contains(key)) << node << " has no " << key;
  proto::ElementProto e;
  ElementToProto(element, &e);
  (*state->mutable_blobs())[key] = e.SerializeAsString();
  return ckpt.SerializeAsString();
}

// A checkpoint of `ds` after `read` elements.
std::string SavedAfter(const Dataset& ds, int64_t read) {
  auto it = ds.MakeIterator();
  absl::StatusOr<std::vector<Element>> first = Drain(*it, read);
  EXPECT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::string> saved = it->Save();
  EXPECT_TRUE(saved.ok()) << saved.status();
  return saved.ok() ? *saved : "";
}

// Restoring `checkpoint` into a fresh iterator of `ds` fails with DataLoss saying `what`.
void ExpectRefused(const Dataset& ds, const std::string& checkpoint, const std::string& what) {
  auto it = ds.MakeIterator();
  const absl::Status s = it->Restore(checkpoint);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(what));
  // The error is sticky.
  EXPECT_EQ(it->GetNext().status(), s);
}

TEST(ElementSpecTest, RestoreRefusesAShuffleBufferOfAnotherType) {
  for (bool sources : {true, false}) {
    const Dataset ds =
        Dataset::Range(50).Shuffle(8, {.seed = 1}).WithOptions({.checkpoint_sources = sources});
    const std::string saved = SavedAfter(ds, 2);
    ExpectRefused(ds, WithBuffered(saved, "Shuffle[1]", {Tensor::Scalar<float>(1)}),
                  "checkpoint of Shuffle[1] (Shuffle(8, seed=1)): a buffered element is not "
                  "(int64[]): component 0 is float32[], expected int64[]");
    ExpectRefused(ds, WithBuffered(saved, "Shuffle[1]", {Int(1)[0], Int(2)[0]}),
                  "the element has 2 components, expected 1");
    // The genuine checkpoint restores.
    EXPECT_TRUE(ds.MakeIterator()->Restore(saved).ok());
  }
}

TEST(ElementSpecTest, RestoreRefusesAPrefetchBufferOfAnotherType) {
  const Dataset ds = Dataset::Range(50).Prefetch(4);
  ExpectRefused(ds, WithBuffered(SavedAfter(ds, 1), "Prefetch[1]", Int64s({1, 2}, {2})),
                "checkpoint of Prefetch[1] (Prefetch(4)): a buffered element is not (int64[]): "
                "component 0 is int64[2], expected int64[]");
}

TEST(ElementSpecTest, RestoreChecksBufferedBatchesAgainstTheBatchSpec) {
  // Batch saves no elements (it recomputes its batches); what buffers its batches checks them.
  const Dataset full = Dataset::Range(50).Batch(4, {.drop_remainder = true}).Prefetch(2);
  ExpectRefused(full, WithBuffered(SavedAfter(full, 1), "Prefetch[2]", Int64s({1, 2, 3}, {3})),
                "component 0 is int64[3], expected int64[4]");
  const Dataset any = Dataset::Range(50).Batch(4).Prefetch(2);
  const std::string saved = SavedAfter(any, 1);
  ExpectRefused(any, WithBuffered(saved, "Prefetch[2]", Int64s({1, 2, 3, 4}, {2, 2})),
                "component 0 is int64[2, 2], expected int64[?]");
  // A short batch is one of Batch(4)'s.
  EXPECT_TRUE(
      any.MakeIterator()->Restore(WithBuffered(saved, "Prefetch[2]", Int64s({1}, {1}))).ok());
}

TEST(ElementSpecTest, RestoreRefusesTheRestOfAnUnbatchedElementOfAnotherType) {
  const Dataset ds = Dataset::Range(20).Batch(4).Unbatch();
  ExpectRefused(ds,
                WithBuffered(SavedAfter(ds, 1), "Unbatch[2]", {Tensor(DType::kBytes, Shape{3})}),
                "checkpoint of Unbatch[2] (Unbatch): a buffered element is not (int64[?]): "
                "component 0 is bytes[3], expected int64[?]");
}

TEST(ElementSpecTest, RestoreRefusesKeptWindowElementsOfAnotherType) {
  const Dataset ds = Dataset::Range(20).Window(4, {.shift = 2});
  ExpectRefused(ds, WithBuffered(SavedAfter(ds, 1), "Window[1]", {Tensor::Scalar<float>(2)}),
                "checkpoint of Window[1] (Window(4, shift=2, stride=1)): a buffered element is "
                "not (int64[]): component 0 is float32[], expected int64[]");
}

TEST(ElementSpecTest, RestoreRefusesACacheOfAnotherType) {
  const Dataset ds = Dataset::Range(10).Cache();
  ExpectRefused(ds, WithBuffered(SavedAfter(ds, 3), "Cache[1]", {Tensor::Scalar<std::string>("x")}),
                "Cache[1] (Cache): a buffered element is not (int64[]): component 0 is bytes[]");
}

TEST(ElementSpecTest, RestoreRefusesAParallelMapResultThatBreaksTheDeclaration) {
  auto twice = [](Element e) -> absl::StatusOr<Element> { return Int(2 * e[0].scalar<int64_t>()); };
  const Dataset declared =
      Dataset::Range(50).Map(twice, {.num_parallel_calls = 2, .output_signature = kInt64Scalar});
  const std::string saved = SavedAfter(declared, 1);
  ExpectRefused(declared, WithBuffered(saved, "Map[1]", {Tensor::Scalar<float>(2)}),
                "Map[1] (Map(num_parallel_calls=2)): a buffered element is not (int64[])");
  // Undeclared, the Map's elements may be anything: the same checkpoint restores.
  const Dataset undeclared = Dataset::Range(50).Map(twice, {.num_parallel_calls = 2});
  EXPECT_TRUE(undeclared.MakeIterator()
                  ->Restore(WithBuffered(saved, "Map[1]", {Tensor::Scalar<float>(2)}))
                  .ok());
}

TEST(ElementSpecTest, RestoreRefusesTheInputElementOfAnInnerPipelineBeforeCallingTheFunction) {
  int calls_with_a_bad_element = 0;
  auto inner = [&](Element e) -> absl::StatusOr<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kInt64) ++calls_with_a_bad_element;
    // Longer than a parallel slot's buffer (64 small elements): the slot saved keeps its input.
    return Dataset::Range(1000);
  };
  const Dataset flat = Dataset::Range(3).FlatMap(inner);
  ExpectRefused(flat,
                WithBlobElement(SavedAfter(flat, 2), "FlatMap[1]", "inner_element",
                                {Tensor::Scalar<std::string>("x")}),
                "checkpoint of FlatMap[1] (FlatMap): a buffered element is not (int64[]): "
                "component 0 is bytes[], expected int64[]");
  for (int parallel : {1, 2}) {
    const Dataset interleaved =
        Dataset::Range(3).Interleave(inner, {.cycle_length = 2, .num_parallel_calls = parallel});
    ExpectRefused(interleaved,
                  WithBlobElement(SavedAfter(interleaved, 2), "Interleave[1] slot", "input_element",
                                  {Tensor::Scalar<std::string>("x")}),
                  "component 0 is bytes[], expected int64[]");
  }
  EXPECT_EQ(calls_with_a_bad_element, 0);
}

TEST(ElementSpecTest, RestoreChecksAnInterleaveSlotsBufferAgainstItsInnerDataset) {
  // Undeclared, the Interleave's spec is unknown; its inner datasets' (Range: int64[]) is not.
  // Inner datasets longer than a slot's buffer (64 small elements), so that the slot saved still
  // has its iterator.
  const Dataset ds = Dataset::Range(3).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> { return Dataset::Range(1000); },
      {.cycle_length = 2, .num_parallel_calls = 2});
  const std::string saved = SavedAfter(ds.WithOptions({.checkpoint_sources = false}), 2);
  ExpectRefused(ds.WithOptions({.checkpoint_sources = false}),
                WithBuffered(saved, "Interleave[1] slot", {Tensor::Scalar<float>(1)}),
                "checkpoint of Interleave[1] (Interleave(cycle_length=2, block_length=1, "
                "num_parallel_calls=2)): a buffered element is not (int64[]): component 0 is "
                "float32[], expected int64[]");
}

TEST(ElementSpecTest, RestoreRefusesGroupsOfAnotherType) {
  const Dataset ds = Dataset::Range(20).GroupByWindow(
      [](const Element& e) -> absl::StatusOr<int64_t> { return e[0].scalar<int64_t>() % 3; },
      [](int64_t, Dataset window) -> absl::StatusOr<Dataset> { return window; }, 4);
  ExpectRefused(ds, WithBuffered(SavedAfter(ds, 1), "GroupByWindow[1]", {Tensor::Scalar<float>(1)}),
                "checkpoint of GroupByWindow[1] (GroupByWindow(window_size=4)): a buffered "
                "element is not (int64[]): component 0 is float32[], expected int64[]");
}

// The checks refuse nothing genuine: a pipeline whose every buffer is checked against a known
// spec (each function declared) resumes exactly, its elements saved whole or as sources.
TEST(ElementSpecTest, GenuineCheckpointsOfCheckedBuffersStillResumeExactly) {
  auto twice = [](Element e) -> absl::StatusOr<Element> { return Int(2 * e[0].scalar<int64_t>()); };
  auto inner = [](Element e) -> absl::StatusOr<Dataset> {
    return Dataset::Range(e[0].scalar<int64_t>() % 4 + 1);
  };
  auto key = [](const Element& e) -> absl::StatusOr<int64_t> { return e[0].scalar<int64_t>() % 3; };
  auto reduce = [](int64_t, Dataset window) -> absl::StatusOr<Dataset> { return window; };
  for (bool sources : {true, false}) {
    const Dataset ds = Dataset::Range(30)
                           .Map(twice, {.num_parallel_calls = 2, .output_signature = kInt64Scalar})
                           .Interleave(inner, {.cycle_length = 2,
                                               .num_parallel_calls = 2,
                                               .output_signature = kInt64Scalar})
                           .FlatMap(inner, kInt64Scalar)
                           .GroupByWindow(key, reduce, 3, kInt64Scalar)
                           .Cache()
                           .Repeat(2)
                           .Shuffle(6, {.seed = 5})
                           .Window(3, {.shift = 2})
                           .Unbatch()
                           .Batch(4, {.drop_remainder = true})
                           .Prefetch(2)
                           .WithOptions({.checkpoint_sources = sources});
    EXPECT_EQ(ds.element_spec().DebugString(), "(int64[4])");
    ExpectCheckpointsResumeExactly(ds, {0, 1, 4, 13, 40, 70});
  }
}

TEST(ElementSpecTest, ASnapshotOfAnotherTypeIsDataLoss) {
  // The fingerprint vouches for a snapshot of int64s; the pipeline yields bytes.
  ScopedTempDir dir;
  ASSERT_TRUE(Collect(Dataset::Range(5).Snapshot(dir.path(), {.fingerprint = "v1"})).ok());
  const Dataset words = Dataset::FromTensors({Tensor::Scalar<std::string>("w")})
                            .Repeat(5)
                            .Snapshot(dir.path(), {.fingerprint = "v1"});
  auto it = words.MakeIterator();
  absl::StatusOr<std::optional<Element>> first = it->GetNext();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(first.status().message(),
              HasSubstr("record 0 is not (bytes[]) (component 0 is int64[], expected bytes[])"));
}

}  // namespace
}  // namespace sluice
