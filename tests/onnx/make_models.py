#!/usr/bin/env python3
"""Writes ONNX models for the import tests (tests/train/import/), with writers that are not
sluice's own:

  make_models.py operators OUT.onnx
      a graph of every operator ImportOnnx reads, written with ONNX's own helper
      (Debian's python3-onnx): weights from a fixed seed, NCHW input [N, 3, 9, 8];
  make_models.py nhwc OUT.onnx
      a small graph whose input is NHWC and transposed to NCHW first, as tf2onnx writes Keras
      models;
  make_models.py small_base OUT.onnx
      a small classifier of RGB images of any size (the height and width are free): two
      convolutions with a batch norm, a max pool, a global average pool ("/avgpool/...") and a
      Gemm of 10 classes, for the transfer-learning tests and the example;
  make_models.py external IN.onnx OUT.onnx
      IN's model saved again by ONNX's own save_model with every initializer's data in one
      other file, OUT.onnx.data beside it (ONNX's external data, as models over 2 GiB are saved);
  make_models.py torchvision NAME MODE SIZE OUT.onnx
      torchvision's NAME (resnet18, resnet50, mobilenet_v2) with random weights, exported by
      torch.onnx.export at SIZE x SIZE with a dynamic batch; MODE "inference" (batch norm folded
      into the convolutions) or "training" (TrainingMode.PRESERVE, no constant folding: the
      BatchNormalization nodes stay). Exit status 3 when torch or torchvision is missing.
"""
import sys

import numpy as np


def operators(out):
    from onnx import TensorProto, checker, helper, numpy_helper, save

    rng = np.random.default_rng(7)

    def weight(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        weight("w1", (6, 3, 3, 3)), weight("b1", (6,)),
        weight("bn_scale", (6,), 0.2), weight("bn_bias", (6,)), weight("bn_mean", (6,)),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 6).astype(np.float32), "bn_var"),
        weight("w2", (4, 6, 2, 3)),
        weight("w3", (4, 4, 1, 1)), weight("b3", (4,)),
        weight("w4", (4, 8, 1, 1)), weight("b4", (4,)),
        weight("w5", (4, 1, 3, 3)),  # depthwise: group 4
        numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 0, 2], dtype=np.int64), "pads"),
        # Flatten of [4, 3, 4], the global average of 8 channels and the global max of 4.
        weight("fc_w", (5, 4 * 3 * 4 + 8 + 4)), weight("fc_b", (5,)),
        weight("mm_w", (5, 3)),
        numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "flat_shape"),
    ]
    nodes = [
        # Conv with asymmetric pads and a stride, then batch norm and relu.
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="/stem/conv/Conv",
                         kernel_shape=[3, 3], pads=[1, 0, 2, 1], strides=[2, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["bn1"], name="/stem/bn/BatchNormalization", epsilon=1e-3, momentum=0.9),
        helper.make_node("Relu", ["bn1"], ["r1"], name="/stem/relu/Relu"),
        helper.make_node("Identity", ["r1"], ["r1_id"], name="identity"),
        # A dilated convolution without a bias, and a max pool whose padding must never win.
        helper.make_node("Conv", ["r1_id", "w2"], ["c2"], name="/block/conv/Conv",
                         kernel_shape=[2, 3], pads=[1, 1, 1, 1], dilations=[2, 1]),
        helper.make_node("MaxPool", ["c2"], ["p1"], name="/block/pool/MaxPool",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Conv", ["p1", "w3", "b3"], ["c3"], name="/block/proj/Conv",
                         kernel_shape=[1, 1]),
        # A swish gate, x * sigmoid(x) (EfficientNet's, MobileNetV3's SE blocks).
        helper.make_node("Sigmoid", ["c3"], ["gate"], name="/block/gate/Sigmoid"),
        helper.make_node("Mul", ["c3", "gate"], ["swish"], name="/block/gate/Mul"),
        helper.make_node("Add", ["swish", "p1"], ["sum"], name="/block/Add"),
        helper.make_node("Mul", ["sum", "c3"], ["prod"], name="/block/Mul"),
        helper.make_node("Constant", [], ["zero"], name="/block/Constant",
                         value=numpy_helper.from_array(np.array(0, dtype=np.float32))),
        helper.make_node("Clip", ["prod", "zero"], ["clipped"], name="/block/Clip"),
        helper.make_node("Concat", ["clipped", "sum"], ["cat"], name="/block/Concat", axis=1),
        # MobileNet's pieces: zero padding, a depthwise convolution, ReLU6 as Clip(0, 6).
        helper.make_node("Pad", ["p1", "pads"], ["padded"], name="/side/Pad"),
        helper.make_node("Conv", ["padded", "w5"], ["dw"], name="/side/dw/Conv",
                         kernel_shape=[3, 3], group=4),
        helper.make_node("Constant", [], ["six"], name="/side/Constant",
                         value=numpy_helper.from_array(np.array(6, dtype=np.float32))),
        helper.make_node("Clip", ["dw", "zero", "six"], ["relu6"], name="/side/Clip"),
        helper.make_node("GlobalMaxPool", ["relu6"], ["gmp"], name="/side/gmp/GlobalMaxPool"),
        helper.make_node("Flatten", ["gmp"], ["gmp_flat"], name="/side/Flatten", axis=1),
        helper.make_node("AveragePool", ["cat"], ["avg"], name="/head/avg/AveragePool",
                         kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("Dropout", ["avg"], ["drop"], name="/head/Dropout"),
        # Flatten of an image with 6 positions: the Gemm's rows are in (C, H, W) order.
        helper.make_node("Conv", ["drop", "w4", "b4"], ["c4"], name="/head/conv/Conv",
                         kernel_shape=[1, 1], strides=[1, 1]),
        helper.make_node("Flatten", ["c4"], ["flat_c4"], name="/head/Flatten", axis=1),
        # Tanh of the flattened image: elementwise, it keeps the (C, H, W) column order.
        helper.make_node("Tanh", ["flat_c4"], ["flat"], name="/head/squash/Tanh"),
        helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="/head/gap/GlobalAveragePool"),
        helper.make_node("Reshape", ["gap", "flat_shape"], ["gap_flat"], name="/head/Reshape"),
        helper.make_node("Concat", ["flat", "gap_flat", "gmp_flat"], ["features"],
                         name="/head/features/Concat", axis=1),
        helper.make_node("Gemm", ["features", "fc_w", "fc_b"], ["logits"], name="/fc/Gemm",
                         transB=1),
        helper.make_node("MatMul", ["logits", "mm_w"], ["output"], name="/out/MatMul"),
    ]
    graph = helper.make_graph(
        nodes, "operators",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 9, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    checker.check_model(model, full_check=True)
    save(model, out)


def nhwc(out):
    from onnx import TensorProto, checker, helper, numpy_helper, save

    rng = np.random.default_rng(8)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b")]
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], name="to_nchw", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "w", "b"], ["conv"], name="conv", kernel_shape=[3, 3],
                         auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Relu", ["conv"], ["output"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "nhwc",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 7, 6, 2])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4, 4, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    checker.check_model(model, full_check=True)
    save(model, out)


def small_base(out):
    from onnx import TensorProto, checker, helper, numpy_helper, save

    rng = np.random.default_rng(9)

    def weight(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        weight("conv1.weight", (8, 3, 3, 3)), weight("conv1.bias", (8,)),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn1.weight"),
        weight("bn1.bias", (8,), 0.1), weight("bn1.running_mean", (8,), 0.1),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn1.running_var"),
        weight("conv2.weight", (8, 8, 3, 3)), weight("conv2.bias", (8,)),
        weight("fc.weight", (10, 8)), weight("fc.bias", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"],
                         name="/conv1/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c1", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"],
                         ["b1"], name="/bn1/BatchNormalization", epsilon=1e-5, momentum=0.9),
        helper.make_node("Relu", ["b1"], ["r1"], name="/relu/Relu"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="/maxpool/MaxPool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"],
                         name="/conv2/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="/relu_1/Relu"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"],
                         name="/avgpool/GlobalAveragePool"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="/Flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["output"], name="/fc/Gemm",
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_base",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    checker.check_model(model, full_check=True)
    save(model, out)


def torchvision_model(name, mode, size, out):
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"make_models.py: {e} (python3-torch and python3-torchvision)", file=sys.stderr)
        sys.exit(3)
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    # Batch-norm statistics away from 0 and 1, so that a misread one shows.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    kwargs = dict(opset_version=13, input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    if mode == "training":
        kwargs.update(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    elif mode != "inference":
        sys.exit(f"make_models.py: mode {mode!r}, not inference or training")
    torch.onnx.export(model, torch.randn(1, 3, size, size), out, **kwargs)


def external(src, out):
    import os

    import onnx

    model = onnx.load_model(src)
    onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=os.path.basename(out) + ".data", size_threshold=0)


def main():
    args = sys.argv[1:]
    if args[:1] == ["operators"] and len(args) == 2:
        operators(args[1])
    elif args[:1] == ["nhwc"] and len(args) == 2:
        nhwc(args[1])
    elif args[:1] == ["small_base"] and len(args) == 2:
        small_base(args[1])
    elif args[:1] == ["external"] and len(args) == 3:
        external(args[1], args[2])
    elif args[:1] == ["torchvision"] and len(args) == 5:
        torchvision_model(args[1], args[2], int(args[3]), args[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
