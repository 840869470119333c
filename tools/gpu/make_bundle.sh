#!/usr/bin/env bash
# Builds the GPU check binaries here (a machine with the Debian packages of tools/setup.sh and a
# CUDA toolkit; no GPU needed) and packs them, with the shared libraries they need that a CUDA
# image may lack (OpenBLAS, gfortran, quadmath, fmt, gomp), into
#   build-gpu-bundle/nsv-gpu-bundle.tar.xz
# for tools/gpu/run_gpu_checks.sh on a GPU machine whose image cannot build nsverify (no Eigen,
# Boost, OpenBLAS...). glibc, libstdc++ and the CUDA libraries (cudart, cuBLAS) are NOT packed:
# they come from the GPU machine (its glibc/libstdc++ must be at least as new as this one's, and
# its CUDA runtime 13.x). With the device tool: carry "build-gpu-bundle" and run
#   NSV_GPU_USE_BUNDLE=1 bash tools/gpu/run_gpu_checks.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$repo/build-gpu-bundle-work
dest=$repo/build-gpu-bundle
stage=$work/stage
cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNSV_WITH_CUDA=ON >/dev/null
cmake --build "$work/build" -j "$(nproc)" --target nsv_cuda_tests nsv_cuda_tests_emulated nsv_cuda_catalogue nsv_gpu_bench nsv
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$dest"
for t in nsv_cuda_tests nsv_cuda_tests_emulated nsv_cuda_catalogue nsv_gpu_bench nsv; do
  f=$(find "$work/build" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "make_bundle: $t was not built" >&2; exit 1; }
  cp "$f" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$t"
done
# Shared libraries outside glibc/libstdc++/libgcc and outside CUDA.
for f in "$stage"/bin/*; do ldd "$f"; done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
printf 'built %s on %s from commit %s\n' "$(date -u +%FT%TZ)" "$(hostname)" \
  "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" >"$stage/BUILD_INFO"
tar -cJf "$dest/nsv-gpu-bundle.tar.xz" -C "$stage" .
ls -la "$dest/nsv-gpu-bundle.tar.xz"
echo "contents:"; (cd "$stage" && find . -type f | sort)
