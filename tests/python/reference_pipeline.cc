// The C++ side of tests/python/test_values.py: the image pipeline that the test declares in Python
// with sluice.ops, declared here with the C++ API and the ops called one by one (unfused), its
// batches written out raw. Usage: reference_pipeline RECORDS OUT; prints "dtype shape" per
// component per batch, in the order their bytes follow each other in OUT.
#include <cstdio>
#include <fstream>
#include <string>

#include "autotune/controller.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "io/example_parser.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "ops/random_resized_crop.h"

namespace {

using namespace sluice;

absl::Status Run(const std::string& records, const std::string& out_path) {
  SLUICE_ASSIGN_OR_RETURN(
      ExampleParser parser,
      ExampleParser::Create({{{"image/encoded", FixedLenFeature{DType::kBytes}},
                              {"image/class/label", FixedLenFeature{DType::kInt64}}}}));
  auto augment = [parser](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
    SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> f, parser.Parse(e[0].scalar<std::string>()));
    SLUICE_ASSIGN_OR_RETURN(Tensor image,
                            DecodeAndRandomResizedCrop(f[0].scalar<std::string>(), 48, 64, c.seed));
    SLUICE_ASSIGN_OR_RETURN(image, RandomFlipLeftRight(image, c.seed));
    SLUICE_ASSIGN_OR_RETURN(image, Normalize(image, kImageNetMean, kImageNetStd));
    return Element{image, f[1]};
  };
  Dataset ds = Dataset::ListFiles(records, {.shuffle = false})
                   .Interleave([](const std::string& f) { return Dataset::TFRecord(f); },
                               {.num_parallel_calls = 2})
                   .Repeat(3)
                   .Map(augment, {.num_parallel_calls = 2})
                   .Shuffle(4)
                   .Batch(2)
                   .Prefetch(2)
                   .WithOptions({.seed = 7});
  std::ofstream out(out_path, std::ios::binary);
  auto it = ds.MakeIterator();
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> batch, it->GetNext());
    if (!batch) break;
    for (const Tensor& t : *batch) {
      std::printf("%s %s\n", std::string(DTypeName(t.dtype())).c_str(),
                  t.shape().DebugString().c_str());
      out.write(static_cast<const char*>(t.raw_data()),
                static_cast<std::streamsize>(t.byte_size()));
    }
  }
  return out ? absl::OkStatus() : absl::DataLossError("cannot write " + out_path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: reference_pipeline RECORDS OUT\n"), 2;
  absl::Status status = Run(argv[1], argv[2]);
  if (!status.ok()) return std::fprintf(stderr, "%s\n", status.ToString().c_str()), 1;
  return 0;
}
