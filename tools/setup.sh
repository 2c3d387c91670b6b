#!/usr/bin/env bash
# Installs the Debian packages sluice needs, only those that are missing.
# Safe to run any number of times.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libprotobuf-dev protobuf-compiler libtbb-dev
  libturbojpeg0-dev libjpeg62-turbo-dev zlib1g-dev libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
