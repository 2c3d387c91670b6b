#ifndef SLUICE_SLUICE_H_
#define SLUICE_SLUICE_H_

// Umbrella header: everything a user of the installed package needs.
#include "autotune/controller.h"
#include "core/element.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "io/example_builder.h"
#include "io/example_parser.h"
#include "io/glob.h"
#include "io/proto/example.pb.h"
#include "io/record_index.h"
#include "io/sequence_example_parser.h"
#include "io/tfrecord_reader.h"
#include "io/tfrecord_writer.h"
#include "ops/decode_jpeg.h"
#include "ops/encode_jpeg.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "ops/random_resized_crop.h"
#include "ops/resize.h"
#include "train/adam.h"
#include "train/conv2d_layer.h"
#include "train/dense_layer.h"
#include "train/sequential.h"
#include "train/sgd.h"
#include "train/stateless_layers.h"
#include "train/tape.h"

#endif  // SLUICE_SLUICE_H_
