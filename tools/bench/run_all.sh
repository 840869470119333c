#!/usr/bin/env bash
# One command for the performance report (SPEC issue 8):
#   tools/bench/run_all.sh [BUILD_DIR]        (default build-perf; results in BUILD_DIR/bench-results)
# Builds nsv + nsv_bench, runs the Google Benchmark suite (JSON), the PyTorch comparison
# (tools/bench/torch_ns.py, same shapes, same thread count), the sweep throughput at 1 and 2
# threads, the peak-memory measurement and the accuracy cost of products=symmetric, then renders
# reports/performance.md from the results (`python3 tools/report performance RESULTS_DIR`, which
# re-renders it without measuring anything).
# Environment: QUICK=1 drops 4096x4096 from the torch run (the slowest part, ~1 min);
#   OVERHEAD_BEFORE=FILE (a tools/bench/nsverify_overhead.py --json of an earlier build, run as this
#   stage runs it: OPENBLAS_NUM_THREADS unset) and
#   OVERHEAD_BEFORE_LABEL (what it measured): shown beside the checker overhead;
#   STAGES="bench torch sweep memory accuracy overhead" (default: all) reruns only some stages, keeping the other
#   stages' result files, then rewrites the report; STAGES=layer (never in the default: about 18
#   minutes) runs the checks once per property at Llama-3-8B's MLP shape 4096x14336, and REF's floor there.
#   STAGES=optimizer (never in the default) times one nsverify.torch.check_optimizer of the gather Muon on a tiny
#   Llama layer (tp 2, 3 steps, median of 5) with nsverify's own share beside the optimizer's
#   (tools/bench/optimizer_check.py); OPTIMIZER_LAYER=1 adds one check on Llama-3-8B's layer shapes (tp 2, 1 step:
#   long, its time in reports/performance.md).
#   STAGES=regression (never in the default) with REGRESSION_AGAINST=COMMIT[,COMMIT...]: tools/bench/regression.py
#   builds those commits and times the reference's kernels of each beside this build, in one run.
#   STAGES=audit_scaling (never in the default) with AUDIT_AGAINST=COMMIT: tools/bench/audit_scaling.py times
#   `nsv audit` at the sizes that once took minutes (dp 8192, tp 1024, 100,000 layers) beside that commit's build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-perf}
OUT=$BUILD/bench-results
PY=/usr/bin/python3
mkdir -p "$OUT"
cd "$ROOT"

echo "== build ($BUILD)"
if [ ! -f "$BUILD/build.ninja" ] && [ ! -f "$BUILD/Makefile" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DNSV_WITH_CUDA=OFF -G Ninja
fi
cmake --build "$BUILD" --target nsv nsv_bench nsv_peak_memory nsv_products_accuracy nsv_ref_bounds _nsverify
NSV=$BUILD/cli/nsv
BENCH=$BUILD/tools/bench/nsv_bench

export OPENBLAS_NUM_THREADS=1
# The checker's stages (overhead, layer) time the user's kernel as it runs in the user's program,
# on the machine's OpenBLAS threads: OPENBLAS_NUM_THREADS unset there. nsverify's own BLAS and
# LAPACK calls hold one thread each whatever the count (lib/include/nsv/blas_threads.hpp).
USERS_THREADS=(env -u OPENBLAS_NUM_THREADS)
STAGES=${STAGES:-bench torch sweep memory accuracy overhead}
has() { if [[ " $STAGES " == *" $1 "* ]]; then echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $(uptime)" > "$OUT/stage_$1"; return 0; fi; return 1; }

if has bench; then
echo "== Google Benchmark suite (1 thread)"
OMP_NUM_THREADS=1 "$BENCH" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT/nsv_bench.json" --benchmark_out_format=json | tee "$OUT/nsv_bench.txt"
fi

if has torch; then
echo "== PyTorch comparison (1 thread)"
rm -f "$OUT/torch.json" "$OUT/torch_4096.json" "$OUT/torch.skipped"
if $PY -c 'import torch' 2>/dev/null; then
  SHAPES=256x256,512x1024,1024x1024,1024x4096
  $PY tools/bench/torch_ns.py --threads 1 --shapes $SHAPES --dtypes fp32 --repeat 3 --warmup 1 \
    --json "$OUT/torch.json" | tee "$OUT/torch.txt"
  if [ "${QUICK:-0}" != 1 ]; then
    $PY tools/bench/torch_ns.py --threads 1 --shapes 4096x4096 --dtypes fp32 --repeat 1 --warmup 0 \
      --json "$OUT/torch_4096.json" | tee -a "$OUT/torch.txt"
  fi
else
  echo "python3-torch not importable by $PY: PyTorch comparison skipped" | tee "$OUT/torch.skipped"
fi
fi

if has sweep; then
echo "== sweep throughput (1 vs 2 threads)"
: > "$OUT/sweep.jsonl"
SWEEP=(sweep --shapes 128x256,256x256 --tp 1,2,4 --axis 0,1 --kernel standard,gram
       --strategy shard,gather,gram_allreduce --seeds 16 --quiet --json)
for t in 1 2 1 2; do   # interleaved, twice each: medians of side-by-side runs
  /usr/bin/time -f '%e %U %S' -o "$OUT/sweep_t${t}.time.tmp" env OMP_NUM_THREADS=$t "$NSV" "${SWEEP[@]}" --threads $t \
    > "$OUT/sweep_t${t}.json.tmp"
  $PY - "$OUT/sweep_t${t}.json.tmp" "$OUT/sweep_t${t}.time.tmp" "$t" >> "$OUT/sweep.jsonl" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1])); s = j["summary"]
wall, user, sys_ = map(float, open(sys.argv[2]).read().split()[-3:])
print(json.dumps(dict(threads=int(sys.argv[3]), ran=s["ran"], cases=s["cases"], engine_seconds=s["seconds"],
                      wall_seconds=wall, cpu_seconds=user + sys_, cpu_utilisation=(user + sys_) / wall)))
PYEOF
done
rm -f "$OUT"/sweep_t*.tmp
# Control: the CPU share two independent busy processes get right now (200% on an idle 2-core box).
/usr/bin/time -f '%P' -o "$OUT/control.tmp" bash -c 'timeout 3 yes >/dev/null & timeout 3 yes >/dev/null; wait' || true
echo "{\"control_two_busy_loops_cpu_percent\": $(tr -d '%' < "$OUT/control.tmp")}" > "$OUT/sweep_control.json"
rm -f "$OUT/control.tmp"
cat "$OUT/sweep.jsonl" "$OUT/sweep_control.json"
fi

if has memory; then
echo "== peak memory of one NS call, in process (nsv_peak_memory)"
: > "$OUT/memory_call.jsonl"
for case in "4096x4096 standard 5" "2048x8192 gram 5" "1024x4096 standard 5" "1024x4096 gram 5"; do
  OMP_NUM_THREADS=1 "$BUILD/tools/bench/nsv_peak_memory" $case fp32 >> "$OUT/memory_call.jsonl"
done
cat "$OUT/memory_call.jsonl"
echo "== peak memory (nsv ns, /usr/bin/time -v)"
$PY - "$OUT" <<'PYEOF'
import numpy as np, sys
out = sys.argv[1]
rng = np.random.default_rng(0)
for r, c in [(8, 8), (4096, 4096), (2048, 8192)]:
    np.save("%s/mem_%dx%d.npy" % (out, r, c), rng.standard_normal((r, c), dtype=np.float32))
PYEOF
: > "$OUT/memory.jsonl"
for case in "8x8 standard 5" "4096x4096 standard 1" "8x8 gram 5" "2048x8192 gram 3"; do
  set -- $case
  OMP_NUM_THREADS=1 /usr/bin/time -v -o "$OUT/mem.time.tmp" "$NSV" ns --input "$OUT/mem_$1.npy" --kernel $2 \
    --dtype fp32 --steps $3 --json > "$OUT/mem.json.tmp"
  rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$OUT/mem.time.tmp")
  echo "{\"shape\": \"$1\", \"kernel\": \"$2\", \"steps\": $3, \"max_rss_kib\": $rss}" >> "$OUT/memory.jsonl"
done
rm -f "$OUT"/mem.*.tmp "$OUT"/mem_*.npy
cat "$OUT/memory.jsonl"
fi

if has accuracy; then
echo "== accuracy of products=symmetric vs full (nsv_products_accuracy)"
OMP_NUM_THREADS=1 "$BUILD/tools/bench/nsv_products_accuracy" 24 | tee "$OUT/products_accuracy.jsonl"
fi

if has overhead; then
echo "== the checks' own time per case beside the callable's (tools/bench/nsverify_overhead.py; issue 31)"
rm -f "$OUT/overhead.json" "$OUT/overhead_before.json" "$OUT/overhead_before.txt"
PYTHONPATH="$BUILD/python" "${USERS_THREADS[@]}" $PY tools/bench/nsverify_overhead.py --cases 3 \
  --shapes 64x128,512x1024,1024x4096 --json "$OUT/overhead.json"
if [ -n "${OVERHEAD_BEFORE:-}" ]; then
  cp "$OVERHEAD_BEFORE" "$OUT/overhead_before.json"
  echo "${OVERHEAD_BEFORE_LABEL:-an earlier build}" > "$OUT/overhead_before.txt"
fi
echo "== where REF stands: its least time against the callable's, and the a-priori bound against 2 S (issue 31)"
rm -f "$OUT/ref_floor.json"
PYTHONPATH="$BUILD/python" "${USERS_THREADS[@]}" $PY tools/bench/ref_floor.py --shapes 512x1024,1024x4096 \
  --json "$OUT/ref_floor.json"
"$BUILD/tools/bench/nsv_ref_bounds" 3 | tee "$OUT/ref_bounds.jsonl"
fi

if has layer; then
echo "== the checks at a layer's shape, one case per property (tools/bench/nsverify_overhead.py; issue 31)"
rm -f "$OUT/overhead_layer.json"
PYTHONPATH="$BUILD/python" "${USERS_THREADS[@]}" $PY tools/bench/nsverify_overhead.py --cases 1 --shapes 4096x14336 \
  --json "$OUT/overhead_layer.json"
rm -f "$OUT/ref_floor_layer.json"
PYTHONPATH="$BUILD/python" "${USERS_THREADS[@]}" $PY tools/bench/ref_floor.py --shapes 4096x14336 --repeat 1 \
  --json "$OUT/ref_floor_layer.json"
fi

if has regression; then
echo "== the reference beside earlier commits' builds (tools/bench/regression.py)"
[ -n "${REGRESSION_AGAINST:-}" ] || { echo "run_all.sh: STAGES=regression needs REGRESSION_AGAINST=COMMIT[,COMMIT...]" >&2; exit 2; }
rm -f "$OUT/regression.json" "$OUT/regression.md"
$PY tools/bench/regression.py --against "$REGRESSION_AGAINST" --rounds 5 --torch --build "$BUILD" --json "$OUT/regression.json" \
  --markdown "$OUT/regression.md"
fi

if has audit_scaling; then
echo "== nsv audit at large meshes and models beside an earlier commit's build (tools/bench/audit_scaling.py)"
[ -n "${AUDIT_AGAINST:-}" ] || { echo "run_all.sh: STAGES=audit_scaling needs AUDIT_AGAINST=COMMIT" >&2; exit 2; }
rm -f "$OUT/audit_scaling.json" "$OUT/audit_scaling.md"
$PY tools/bench/audit_scaling.py --against "$AUDIT_AGAINST" --build "$BUILD" --json "$OUT/audit_scaling.json" \
  --markdown "$OUT/audit_scaling.md"
fi

if has optimizer; then
echo "== check_optimizer: its wall time, nsverify's share beside the optimizer's (tools/bench/optimizer_check.py)"
rm -f "$OUT/optimizer_check.json" "$OUT/optimizer_check.skipped"
if $PY -c 'import torch' 2>/dev/null; then
  layer=()
  if [ "${OPTIMIZER_LAYER:-0}" = 1 ]; then layer=(--layer); fi
  PYTHONPATH="$BUILD/python" $PY tools/bench/optimizer_check.py --repeat 5 "${layer[@]}" --json "$OUT/optimizer_check.json"
else
  echo "python3-torch not importable by $PY: check_optimizer not timed" | tee "$OUT/optimizer_check.skipped"
fi
fi

echo "== report"
# The machine the figures were measured on, as data beside them (lscpu, nproc).
$PY -c 'import json, sys; sys.path.insert(0, "tools/report"); from nsvreport.performance import machine_now
print(json.dumps(machine_now(), indent=1))' > "$OUT/machine.json"
$PY tools/report performance "$OUT" reports/performance.md
