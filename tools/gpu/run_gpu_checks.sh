#!/usr/bin/env bash
# GPU checks of the CUDA backend (issue 7). On a machine with an NVIDIA GPU, from the repo root:
#
#   bash tools/gpu/run_gpu_checks.sh
#
# Writes reports/gpu/ (see reports/gpu/README.md): the GPU test gate's log, CPU<->GPU agreement
# per dtype, per-head bit-identity across batch counts 8/4/2/1, the benchmark, and summary.md.
# Budget: under 8 minutes on an H200 (build ~2-3 min on 16 cores, tests ~1 min, bench ~1 min; the
# optional property-suite step only runs in the time left).
#
# Binaries: built here into build-gpu/ (needs the Debian packages of tools/setup.sh and a CUDA
# toolkit), or, where that is impossible (a GPU machine whose image lacks Eigen/Boost/OpenBLAS),
# a prebuilt bundle made by tools/gpu/make_bundle.sh on a machine that has them:
#   build-gpu-bundle/nsv-gpu-bundle.tar.xz   (or NSV_GPU_BUNDLE=/path/to/it.tar.xz)
# The bundle is used when NSV_GPU_USE_BUNDLE=1, or when configuring/building here fails.
#
# Environment: NSV_GPU_REPORT_DIR (default reports/gpu), NSV_GPU_BUILD_DIR (default build-gpu),
# NSV_GPU_BUDGET_S (default 470: later optional steps are skipped past it), NSV_GPU_FULL=0 to skip
# the property suite. If $OUT is set (the device tool's output folder), summary.md and a tarball
# of the whole report are copied there.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 1
out=${NSV_GPU_REPORT_DIR:-$repo/reports/gpu}
build=${NSV_GPU_BUILD_DIR:-$repo/build-gpu}
budget=${NSV_GPU_BUDGET_S:-470}
bundle_tar=${NSV_GPU_BUNDLE:-$repo/build-gpu-bundle/nsv-gpu-bundle.tar.xz}
mkdir -p "$out"
start=$(date +%s)
summary="$out/summary.md"
elapsed() { echo $(($(date +%s) - start)); }
note() { echo "$*" | tee -a "$summary"; }
step() {  # step NAME STATUS DETAIL
  printf '| %s | %s | %ss | %s |\n' "$1" "$2" "$(elapsed)" "$3" >>"$summary"
  echo "== $1: $2 ($3) at $(elapsed)s"
}

# Results of an earlier run must not pass for this one's.
rm -f "$out"/*.csv "$out"/*.log "$out"/bench.md "$out"/env.txt "$out"/summary.md "$out"/cli.txt
{
  echo "# GPU checks of the CUDA backend"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')."
  echo
  echo "| step | status | at | detail |"
  echo "|---|---|---:|---|"
} >"$summary"

# Fail loudly if something forces TF32 on behind the backend's back.
export NVIDIA_TF32_OVERRIDE=0
unset CUBLAS_WORKSPACE_CONFIG CUBLAS_EMULATION_STRATEGY

# --- 0. environment -------------------------------------------------------------------------------
{
  echo "## nvidia-smi"; nvidia-smi 2>&1 || echo "nvidia-smi not available"
  echo; echo "## nvcc"; (command -v nvcc >/dev/null && nvcc --version) || /usr/local/cuda/bin/nvcc --version 2>&1 || echo "no nvcc"
  echo; echo "## cmake"; cmake --version 2>&1 | head -1
  echo; echo "## host"; uname -a; nproc; (grep -m1 'model name' /proc/cpuinfo || true)
  echo; echo "## libraries"; (ldconfig -p 2>/dev/null | grep -E 'libcublas|libcudart|libcuda\.so' || true)
} >"$out/env.txt" 2>&1
if nvidia-smi -L >/dev/null 2>&1; then
  step environment ok "$(nvidia-smi -L | head -1)"
else
  step environment WARNING "nvidia-smi does not list a GPU; the tests will report why the CUDA backend is unavailable"
fi

# --- 1. binaries ----------------------------------------------------------------------------------
targets="nsv_cuda_tests nsv_cuda_tests_emulated nsv_cuda_catalogue nsv_gpu_bench nsv"
build_here() {
  local nvcc_args=()
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNSV_WITH_CUDA=ON "${nvcc_args[@]}" \
    >"$out/build.log" 2>&1 || return 1
  grep -q "nsv_cuda_tests" "$build/build.ninja" 2>/dev/null || {
    echo "configured without the CUDA backend (no nvcc found?)" >>"$out/build.log"
    return 1
  }
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$(nproc)" --target $targets >>"$out/build.log" 2>&1 || return 1
  return 0
}
use_bundle() {
  [ -f "$bundle_tar" ] || return 1
  local dir=/tmp/nsv-gpu-bundle
  rm -rf "$dir" && mkdir -p "$dir" && tar -xJf "$bundle_tar" -C "$dir" || return 1
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  bin_dir="$dir/bin"
  return 0
}
# cuBLAS/cudart of the toolkit, or of the pip wheels PyTorch images carry.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
if py_cublas=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); then
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$py_cublas"
fi
if py_cudart=$(python3 -c 'import nvidia.cuda_runtime, os; print(os.path.join(list(nvidia.cuda_runtime.__path__)[0], "lib"))' 2>/dev/null); then
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$py_cudart"
fi

bin_dir=""
mode=""
if [ "${NSV_GPU_USE_BUNDLE:-0}" = 1 ] && use_bundle; then
  mode="bundle $bundle_tar"
elif build_here; then
  bin_dir="$build"
  mode="built here in $build"
elif use_bundle; then
  mode="bundle $bundle_tar (building here failed: see build.log)"
else
  step binaries FAILED "could not build (see build.log) and no bundle at $bundle_tar"
  tail -30 "$out/build.log"
  exit 1
fi
find_bin() {  # the executable NAME under $bin_dir (a build tree or a bundle's bin/)
  find "$bin_dir" -type f -name "$1" -perm -u+x 2>/dev/null | head -1
}
step binaries ok "$mode"

rc_all=0
run_timed() {  # run_timed SECONDS LOG CMD...: the command's output to LOG, its exit status returned
  local limit=$1 log=$2
  shift 2
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$log" 2>&1
}

# --- 2. the GPU test gate -------------------------------------------------------------------------
tests=$(find_bin nsv_cuda_tests)
if [ -z "$tests" ]; then
  step gpu_tests FAILED "nsv_cuda_tests not found"
  rc_all=1
else
  NSV_GPU_REPORT_DIR="$out" run_timed 300 "$out/gpu_tests.log" "$tests" --color_output=no --log_level=test_suite \
    --report_level=detailed
  rc=$?
  if grep -q "GPU tests skipped" "$out/gpu_tests.log"; then
    step gpu_tests SKIPPED "$(grep -m1 'GPU tests skipped' "$out/gpu_tests.log")"
    rc_all=1
  elif [ $rc -eq 0 ]; then
    step gpu_tests PASSED "$(grep -m1 '^CUDA device' "$out/gpu_tests.log"); $(grep -cE 'Leaving test case' "$out/gpu_tests.log") test cases"
  else
    step gpu_tests FAILED "exit $rc; first failures: $(grep -m3 'error: in' "$out/gpu_tests.log" | sed 's/.*error: in //' | tr '\n' ' ')"
    rc_all=1
  fi
  # Per-head batching verdict in one line (the CSV has the details).
  if [ -f "$out/per_head_batching.csv" ]; then
    looped_bad=$(awk -F, '$6=="looped" && $8!="yes"' "$out/per_head_batching.csv" | wc -l)
    batched_bad=$(awk -F, '$6=="batched" && $8!="yes"' "$out/per_head_batching.csv" | wc -l)
    batched_all=$(awk -F, '$6=="batched"' "$out/per_head_batching.csv" | wc -l)
    step per_head_batching "$([ "$looped_bad" -eq 0 ] && echo ok || echo FAILED)" \
      "looped: $looped_bad non-identical rows; batched (strided-batched GEMM): $batched_bad of $batched_all rows differ from batch count 1"
  fi
fi

# The same tests on the host emulation: separates "the backend's logic" from "CUDA/cuBLAS".
emu=$(find_bin nsv_cuda_tests_emulated)
if [ -n "$emu" ]; then
  NSV_GPU_REPORT_DIR=/tmp/nsv-emulated-report run_timed 120 "$out/emulated_tests.log" "$emu" --color_output=no \
    --report_level=short
  rc=$?
  step emulated_tests "$([ $rc -eq 0 ] && echo PASSED || echo FAILED)" "host emulation of the device API, exit $rc"
  [ $rc -eq 0 ] || rc_all=1
fi

# The kernel property catalogue on the CUDA backend: the records, generators and assertion engine
# every implementation is checked with (properties/cuda/cuda_catalogue.cpp), at the gate's seed.
catalogue=$(find_bin nsv_cuda_catalogue)
if [ -n "$catalogue" ]; then
  RC_PARAMS=seed=20261130 run_timed 300 "$out/cuda_catalogue.log" "$catalogue" --run_test=cuda_catalogue --color_output=no \
    --log_level=test_suite
  rc=$?
  if grep -q "CUDA catalogue skipped" "$out/cuda_catalogue.log"; then
    step cuda_catalogue SKIPPED "$(grep -m1 'CUDA catalogue skipped' "$out/cuda_catalogue.log")"
    rc_all=1
  else
    step cuda_catalogue "$([ $rc -eq 0 ] && echo PASSED || echo FAILED)" \
      "$(grep -m1 'properties passed' "$out/cuda_catalogue.log"); exit $rc"
    [ $rc -eq 0 ] || rc_all=1
  fi
fi

# --- 3. the nsv CLI on the GPU --------------------------------------------------------------------
nsv=$(find_bin nsv)
py=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -n "$nsv" ] && [ -n "$py" ]; then
  "$py" -c 'import numpy as np; np.save("/tmp/nsv_gpu_x.npy", np.random.default_rng(7).standard_normal((512, 1024)).astype(np.float32))'
  {
    for b in cpu cuda; do
      echo "## nsv ns --backend $b"
      "$nsv" ns --input /tmp/nsv_gpu_x.npy --backend "$b" --kernel gram --dtype fp32 --output "/tmp/nsv_gpu_$b.npy" --json 2>&1
    done
    "$py" -c 'import numpy as np; a=np.load("/tmp/nsv_gpu_cuda.npy").astype(np.float64); b=np.load("/tmp/nsv_gpu_cpu.npy").astype(np.float64); print("rel_diff(cuda, cpu) =", np.linalg.norm(a-b)/np.linalg.norm(b))'
  } >"$out/cli.txt" 2>&1
  step cli "$(grep -q 'rel_diff' "$out/cli.txt" && echo ok || echo FAILED)" "$(grep -m1 rel_diff "$out/cli.txt" || echo 'see cli.txt')"
else
  step cli SKIPPED "no nsv binary or no python3 numpy"
fi

# --- 4. benchmark ---------------------------------------------------------------------------------
bench=$(find_bin nsv_gpu_bench)
if [ -z "$bench" ]; then
  step bench FAILED "nsv_gpu_bench not found"
  rc_all=1
else
  quick=()
  [ "$(elapsed)" -gt $((budget - 150)) ] && quick=(--quick)
  run_timed 240 "$out/bench.log" "$bench" --out "$out" "${quick[@]}"
  rc=$?
  step bench "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "exit $rc${quick:+ (quick mode: short of time)}; $([ $rc -eq 0 ] && echo bench.md || tail -1 "$out/bench.log")"
  [ $rc -eq 0 ] || rc_all=1
fi

# --- 5. the property suite's GPU tests (optional, in the time left) -----------------------------
if [ "${NSV_GPU_FULL:-1}" = 0 ]; then
  step properties SKIPPED "NSV_GPU_FULL=0"
elif [ "$bin_dir" != "$build" ]; then
  step properties SKIPPED "bundle mode: the property suite is not in the bundle"
elif [ "$(elapsed)" -gt $((budget - 120)) ]; then
  step properties SKIPPED "out of time ($(elapsed)s of $budget)"
else
  left=$((budget - $(elapsed)))
  if timeout "$left" cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1; then
    left=$((budget - $(elapsed)))
    (cd "$build" && timeout "$left" ctest -L gpu -E '^gpu\.cuda_backend$' --output-on-failure --timeout "$left") \
      >"$out/properties.log" 2>&1
    rc=$?
    if grep -q "No tests were found" "$out/properties.log"; then
      step properties "none" "no other test is labelled gpu yet"
    else
      step properties "$([ $rc -eq 0 ] && echo PASSED || echo FAILED)" "ctest -L gpu, exit $rc; properties.log"
      [ $rc -eq 0 ] || rc_all=1
    fi
  else
    step properties FAILED "full build failed or ran out of time (build.log)"
  fi
fi

note ""
note "Total: $(elapsed)s. Files: $(cd "$out" && ls | tr '\n' ' ')"
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
  cp "$summary" "$OUT/" 2>/dev/null
  tar -czf "$OUT/gpu-report.tar.gz" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null
fi
exit $rc_all
