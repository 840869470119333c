#!/usr/bin/env bash
# Fuzzes every parser of outside data (.npy, safetensors, model config.json, coefficient files,
# grads.json, sweep CSVs read by --resume) with libFuzzer: builds the harnesses of fuzz/ with clang into
# build-fuzz/ (library instrumented for coverage, AddressSanitizer and UBSan), seeds each corpus
# from fixtures/ and fuzz/corpus/, runs the harnesses side by side (one per core), each for the
# time given, and prints each one's executions, coverage and corpus size. Exit status 1 if any
# harness found a crash, a sanitizer report, a leak, a timeout or an out-of-memory; the input that
# triggered it is kept in build-fuzz/artifacts/ (replay: build-fuzz/fuzz/HARNESS ARTIFACT).
#
# Usage: tools/fuzz.sh [--seconds N] [HARNESS ...]     (default: 60 s each, every harness)
# The corpora grow in build-fuzz/corpus/ across runs.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=60
harnesses=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds needs a positive integer, got '$seconds'" >&2; exit 2; }
((${#harnesses[@]})) || harnesses=(fuzz_npy fuzz_model_config fuzz_coeffs fuzz_grads_description fuzz_sweep_resume fuzz_safetensors)

# The project's packages, plus clang's fuzzer runtime and OpenMP.
NSV_SETUP_ONLY_PACKAGES=1 NSV_EXTRA_PACKAGES="clang libclang-rt-14-dev libomp-14-dev" "$repo/tools/setup.sh"
build="$repo/build-fuzz"
if [ ! -f "$build/build.ninja" ]; then
  # Build type Instrumented (line tables only; CMakeLists.txt says why), at -O1: a harness runs
  # parsers on small inputs, where compile time matters more than speed.
  CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Instrumented -DNSV_INSTRUMENTED_OPT=-O1 -DNSV_FUZZ=ON \
    -DNSV_WITH_CUDA=OFF -DNSV_SANITIZE=fuzzer-no-link,address,undefined >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target "${harnesses[@]}"

# Seed corpora: real inputs of each kind from fixtures/, plus the hand-made seeds of fuzz/corpus/.
seed() {  # $1 harness, rest: files
  local dir="$build/corpus/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$dir/$(basename "$(dirname "$f")")-$(basename "$f")"; done
  if [ -d "$repo/fuzz/corpus/${dir##*/fuzz_}" ]; then cp -n "$repo/fuzz/corpus/${dir##*/fuzz_}"/* "$dir/"; fi
}
seed fuzz_npy "$repo"/fixtures/golden/deepspeed/*.npy
seed fuzz_model_config "$repo"/fixtures/models/*.json
seed fuzz_coeffs
seed fuzz_grads_description "$repo"/fixtures/grads/grads.json
seed fuzz_sweep_resume
seed fuzz_safetensors "$repo"/fixtures/runs/tp2/grad.rank0.safetensors

mkdir -p "$build/artifacts" "$build/logs"
rm -f "$build"/logs/*.status
# The harnesses run side by side, one per core: each still fuzzes for the seconds given.
fuzz_one() {  # $1 harness: its libFuzzer run, its exit status in logs/HARNESS.status
  set +e
  (cd "$build" && "fuzz/$1" "corpus/$1" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 -artifact_prefix="artifacts/$1-" >"logs/$1.log" 2>&1)
  echo $? >"$build/logs/$1.status"
}
running=0
for h in "${harnesses[@]}"; do
  if ((running >= $(nproc))); then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$h" &
  running=$((running + 1))
done
wait
status=0
printf '%-24s %12s %10s %8s %8s %s\n' harness executions exec/s cov features result
for h in "${harnesses[@]}"; do
  log="$build/logs/$h.log"
  rc=$(cat "$build/logs/$h.status")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  result=ok
  if [ "$rc" -ne 0 ]; then result="FOUND A BUG (exit $rc): see build-fuzz/logs/$h.log and build-fuzz/artifacts/"; status=1; fi
  printf '%-24s %12s %10s %8s %8s %s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result"
  if [ "$rc" -ne 0 ]; then  # what went wrong and the input, so that a CI log alone says what to fix
    grep -m 8 -E "what\(\)|ERROR|SUMMARY|runtime error|Test unit written" "$log" | sed 's/^/    /' || true
    artifact=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -1)
    if [ -n "$artifact" ] && [ -f "$build/$artifact" ]; then
      echo "    input (first 512 bytes, base64): $(head -c 512 "$build/$artifact" | base64 -w0)"
    fi
  fi
done
exit $status
