#!/usr/bin/env bash
# Copies sluice programs and the shared libraries they load into one folder that runs on another
# Linux machine of the same architecture without sluice's Debian packages:
#   tools/pack_binaries.sh OUT FILE...
# OUT/bin/: each FILE that is a program, stripped; OUT/lib/: each FILE that is a shared library
# (libsluice_cuda.so: a program finds it in ../lib, train/backend/plugin.h), stripped, and every
# library these load (ldd here), except
#   - glibc's own (libc, libm, ld-linux...): the other machine's, which must be as new as this
#     one's (Debian 12: glibc 2.36);
#   - the CUDA libraries (libcudart, cuBLAS, cuDNN, NCCL, ...): the GPU machine's own, matching its
#     driver; tools/device_check.sh finds them there;
#   - libstdc++ and libgcc_s, which go to OUT/lib/fallback/: a machine's own are usually newer, and
#     the CUDA libraries it loads may need them; a runner adds fallback/ only where the program
#     does not start without it.
# Run with LD_LIBRARY_PATH=OUT/lib (and OUT/lib/fallback where needed). Prints what it copied.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tools/pack_binaries.sh OUT FILE..." >&2; exit 2; }
out=$1
shift
mkdir -p "$out/bin" "$out/lib/fallback"

glibc='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|ld-linux-x86-64|ld-linux-aarch64|linux-vdso)\.so'
cuda='^lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|nvrtc|nvrtc-builtins|nvJitLink|cufft|curand|cusparse|cusolver|cupti|nvToolsExt|nvperf_[a-z]*)\.so'
fallback='^(libstdc\+\+|libgcc_s)\.so'

declare -A copied=()
for file in "$@"; do
  [ -f "$file" ] || { echo "pack_binaries: no file $file" >&2; exit 1; }
  name=$(basename "$file")
  if [[ $name == *.so || $name == *.so.* ]]; then
    dest=$out/lib/$name
  else
    dest=$out/bin/$name
  fi
  cp -L "$file" "$dest"
  chmod u+w "$dest"
  strip --strip-unneeded "$dest"
  # Every library the file loads, resolved here; CUDA's may be missing here, and are left out.
  while read -r lib path; do
    [[ $lib =~ $glibc || $lib =~ $cuda ]] && continue
    [ -n "${copied[$lib]:-}" ] && continue
    [ -f "$path" ] || { echo "pack_binaries: $name needs $lib, not found here" >&2; exit 1; }
    if [[ $lib =~ $fallback ]]; then
      cp -L "$path" "$out/lib/fallback/$lib"
    else
      cp -L "$path" "$out/lib/$lib"
    fi
    copied[$lib]=1
  done < <(ldd "$file" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $2 == "=>" && $3 == "not" {print $1, "-"}')
done
echo "pack_binaries: $out: $(ls "$out/bin" | wc -l) programs, $(find "$out/lib" -type f | wc -l) libraries," \
  "$(du -sm "$out" | cut -f1) MB"
