#!/usr/bin/env bash
# Installs the Debian packages sluice needs, only those that are missing, and
# ONNX Runtime's Node.js package for the ONNX export tests (tests/onnx/).
# Safe to run any number of times. On a minimal Debian 12 (debootstrap
# --variant=minbase) this is everything tools/build.sh, tools/test.sh and
# tools/demo.sh need; tools/fresh_root.sh checks that.
#
# tools/setup.sh --bench also installs what the side-by-side PyTorch comparisons
# in bench/ run (PyTorch, torchvision, PIL) and OpenBLAS: Debian's python3-torch
# otherwise runs on the reference BLAS, a baseline no PyTorch user has; and
# Chromium with python3-websocket, which tools/trace_screenshot.py drives to
# picture a profile in Chromium's trace viewer (docs/profiler.md's figure).
set -euo pipefail
bench=0
case "${1:-}" in
  --bench) bench=1 ;;
  "") ;;
  -h | --help)
    echo "Usage: tools/setup.sh [--bench]  (see the comment at the top of this script)"
    exit 0
    ;;
  *)
    echo "setup: unknown option $1 (try --help)" >&2
    exit 2
    ;;
esac

packages=(
  # Compilers and build tools. g++, not build-essential: make and dpkg-dev are
  # not used. clang builds the sanitizer suites in tools/test.sh (with
  # -Wthread-safety); libclang-rt-dev holds its ASan/UBSan/TSan runtimes,
  # which Debian's clang only recommends; llvm provides llvm-symbolizer,
  # without which their reports show no function names, files or lines.
  g++ clang libclang-rt-dev llvm cmake ninja-build pkg-config
  libabsl-dev libprotobuf-dev protobuf-compiler libtbb-dev
  libturbojpeg0-dev libjpeg62-turbo-dev zlib1g-dev
  # libdnnl-dev's CMake config calls find_package(OpenCL); Debian only recommends these.
  libdnnl-dev ocl-icd-opencl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # Open MPI: data-parallel training (distributed/) and mpirun for its tests.
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
  # ONNX export (train/export/): the ONNX protos, and ONNX's own checker for the tests.
  libonnx-dev python3-onnx
  # The API reference from the headers (tools/doxygen.sh, run by tools/test.sh).
  doxygen
  # The Python module (python/, `import sluice`) for Debian's python3: pybind11, the DLPack
  # header its batches leave through, NumPy, and pytest for tests/python.
  python3-dev pybind11-dev python3-pybind11 libdlpack-dev python3-numpy python3-pytest
)
if [ "$bench" = 1 ]; then
  # libopenblas0-pthread becomes the libblas.so.3 alternative that PyTorch's CPU kernels load.
  packages+=(python3-torch python3-torchvision python3-pil libopenblas0-pthread)
  packages+=(chromium python3-websocket)
fi
cd "$(dirname "$0")/.."

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm run ONNX Runtime in the export tests. Any node of 18 or later will do (a
# machine may have its own, with npm inside it), so Debian's are installed only when there is none.
command -v npm >/dev/null || missing+=(nodejs npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  # Through env: sudo would drop an exported DEBIAN_FRONTEND.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime from the npm registry, at the version package-lock.json pins. Its CPU build is
# inside the package; --ignore-scripts skips its install script, which fetches only the CUDA
# provider, from a host these machines cannot reach.
if [ ! -f tests/onnx/node_modules/onnxruntime-node/package.json ]; then
  echo "setup: installing onnxruntime-node into tests/onnx/node_modules"
  (cd tests/onnx && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
