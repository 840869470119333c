#!/usr/bin/env bash
# Bad input never crashes and never yields silent garbage: every case below must exit non-zero,
# print a message that names the problem, and leave an existing output file byte for byte as it
# was, within a time limit (`timeout`: a hang fails) and a memory limit (`ulimit -v`, default
# 4 GiB: a run that tries to allocate what the input claims fails instead of swapping).
# Usage: cli_errors.sh NSV_BINARY (needs /usr/bin/python3 with numpy to write test inputs).
# NSV_CLI_MEMORY_LIMIT_KB=0 lifts the memory limit (the sanitizer build: ASan reserves terabytes
# of address space for its shadow memory, which no ulimit -v allows).
set -u
nsv="$1"
memory_limit_kb=${NSV_CLI_MEMORY_LIMIT_KB:-4194304}
[ "$memory_limit_kb" -gt 0 ] && ulimit -v "$memory_limit_kb"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3
$py - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
np.save(f"{d}/good.npy", rng.standard_normal((16, 32)).astype(np.float32))
g = rng.standard_normal((16, 32)).astype(np.float32); g[3, 4] = np.nan
np.save(f"{d}/nan.npy", g)
np.save(f"{d}/huge.npy", (rng.standard_normal((16, 32)) * 3e37).astype(np.float32))
np.save(f"{d}/int.npy", np.ones((4, 4), dtype=np.int32))
np.save(f"{d}/fortran.npy", np.asfortranarray(rng.standard_normal((8, 6)).astype(np.float32)))
raw = open(f"{d}/good.npy", "rb").read()
open(f"{d}/truncated.npy", "wb").write(raw[: len(raw) - 100])
open(f"{d}/text.npy", "w").write("this is not an array\n")
def npy(name, header, data=b"", version=1):  # a .npy file from its parts, for malformed headers
    header = header.encode() + b"\n"
    size = len(header).to_bytes(2 if version == 1 else 4, "little")
    open(f"{d}/{name}", "wb").write(b"\x93NUMPY" + bytes([version, 0]) + size + header + data)
def dims(shape):
    return "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
oversized = b"\x93NUMPY\x02\x00" + (2 << 20).to_bytes(4, "little") + dims("(2, 3)").encode()
open(f"{d}/oversized_header.npy", "wb").write(oversized)
npy("huge_shape.npy", dims("(65536, 65536)"), bytes(2048))
npy("shape_garbage.npy", dims("(2, 3)x"), bytes(24))
npy("shape_shift.npy", dims("(1<<62, 2)"), bytes(8))
npy("shape_overflow.npy", dims("(4611686018427387904, 2)"), bytes(8))
npy("shape_out_of_range.npy", dims("(99999999999999999999, 2)"), bytes(8))
# Sweep files for --resume: one valid row (written by nsv below), then damaged copies of it.
import os
for name, heads in (("heads0", 0), ("heads_nested", "[" * 200 + "]" * 200)):
    os.makedirs(f"{d}/{name}/step0", exist_ok=True)
    open(f"{d}/{name}/grads.json", "w").write('{"model": {"hidden_size": 256, "num_attention_heads": %s}}' % heads)
os.makedirs(f"{d}/badjson/step0", exist_ok=True)
open(f"{d}/badjson/grads.json", "w").write('{"model": {"hidden_size": 256,')
os.makedirs(f"{d}/wrongshape/step0", exist_ok=True)
np.save(f"{d}/wrongshape/step0/q_proj.npy", np.ones((3, 3), dtype=np.float32))
open(f"{d}/deep.json", "w").write('{"model_type": "llama", "hidden_size": ' + "[" * 100000 + "]" * 100000 + "}")
open(f"{d}/coeffs_nan.txt", "w").write("3.4445 nan 2.0315\n")
open(f"{d}/coeffs_many.txt", "w").write("3.4445 -4.7750 2.0315\n" * 1001)
open(f"{d}/coeffs_blowup.txt", "w").write("1e300 1 1\n")
open(f"{d}/coeffs_big.txt", "w").write("900 0 0\n")  # allowed, but 900^2 overflows fp16 (65504)
np.save(f"{d}/big_endian.npy", rng.standard_normal((16, 32)).astype(">f4"))  # never read as native floats
np.save(f"{d}/empty.npy", np.zeros((0, 32), dtype=np.float32))
np.save(f"{d}/empty_batch.npy", np.zeros((0, 4, 4), dtype=np.float32))
def sparse(name, shape):  # a float32 .npy whose data is a hole: its size is the shape's, its disk use none
    npy(name, dims(str(shape)))
    with open(f"{d}/{name}", "r+b") as f:
        f.seek(0, 2)
        f.truncate(f.tell() + 4 * int(np.prod(shape, dtype=np.float64)))
sparse("elements_70000x70000.npy", (70000, 70000))
sparse("batch_100000x1000x1000.npy", (100000, 1000, 1000))
sparse("memory_30000x30000.npy", (30000, 30000))
PY
mkfifo "$work/fifo"
mkdir "$work/folder"
echo "precious" >"$work/out.npy"
cp "$work/out.npy" "$work/out.orig"
echo "precious" >"$work/out.csv"
cp "$work/out.csv" "$work/out.csv.orig"

passed=0 failed=0
expect_error() {  # $1: description, $2: regex the message must match, rest: the command
  local what="$1" pattern="$2"; shift 2
  local out rc before
  before=$(ls -A "$work")
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then
    echo "FAIL: $what: exit 0"; failed=$((failed + 1)); return
  fi
  if [ $rc -eq 124 ] || [ $rc -gt 127 ]; then  # 124: timeout killed a hang; > 127: a signal
    echo "FAIL: $what: exit $rc (hang or crash): $out"; failed=$((failed + 1)); return
  fi
  if ! grep -qiE -e "$pattern" <<<"$out"; then
    echo "FAIL: $what: message does not match /$pattern/: $out"; failed=$((failed + 1)); return
  fi
  if ! cmp -s "$work/out.npy" "$work/out.orig" || ! cmp -s "$work/out.csv" "$work/out.csv.orig"; then
    echo "FAIL: $what: an existing output file was modified"; failed=$((failed + 1)); return
  fi
  if [ "$(ls -A "$work")" != "$before" ]; then
    echo "FAIL: $what: a file was created or removed:" $(diff <(echo "$before") <(ls -A "$work")); failed=$((failed + 1)); return
  fi
  echo "ok: $what -> $(head -c 160 <<<"$out" | tr '\n' ' ')"
  passed=$((passed + 1))
}

o="$work/out.npy"
expect_error "unknown flag" "--frobnicate|not expected|extra" "$nsv" ns --input "$work/good.npy" --frobnicate
expect_error "unknown products mode" "symmetric,full" "$nsv" ns --input "$work/good.npy" --products upper --output "$o"
expect_error "not a .npy file" "not a \.npy" "$nsv" ns --input "$work/text.npy" --output "$o"
expect_error "truncated .npy" "truncated" "$nsv" ns --input "$work/truncated.npy" --output "$o"
expect_error "integer .npy" "float32 or float64" "$nsv" ns --input "$work/int.npy" --output "$o"
expect_error "Fortran-order .npy" "Fortran" "$nsv" ns --input "$work/fortran.npy" --output "$o"
expect_error "NaN in the input" "NaN or Inf" "$nsv" ns --input "$work/nan.npy" --output "$o"
expect_error "norm overflows fp32" "overflows fp32" "$nsv" ns --input "$work/huge.npy" --output "$o"
expect_error "unknown dtype" "dtype" "$nsv" ns --input "$work/good.npy" --dtype fp8 --output "$o"
expect_error "malformed coefficient file" "coefficient|a b c" "$nsv" ns --input "$work/good.npy" --coeffs "$work/text.npy" --output "$o"
expect_error "output folder missing" "cannot write|folder" "$nsv" ns --input "$work/good.npy" --output "$work/missing/x.npy"
expect_error "heads do not divide" "does not divide" "$nsv" shard --input "$work/good.npy" --tp 2 --heads 5 --strategy per_head
expect_error "per_head on a dim-1 split" "dim-0" "$nsv" shard --input "$work/good.npy" --tp 2 --axis 1 --heads 4 --strategy per_head
expect_error "per_head without heads" "head" "$nsv" shard --input "$work/good.npy" --tp 2 --strategy per_head
expect_error "malformed shape" "shape" "$nsv" shard --shape 12by3 --tp 2
expect_error "sweep: unknown kernel" "kernel" "$nsv" sweep --shapes 16x32 --tp 2 --kernel fancy --out "$work/out.csv"
expect_error "sweep: tp 0" "tp" "$nsv" sweep --shapes 16x32 --tp 0 --out "$work/out.csv"
expect_error "audit: missing config" "config|exist" "$nsv" audit --config "$work/nope.json" --tp 2
# Hardening: headers are scanned strictly and sizes checked before any allocation; inputs must be
# regular files (a FIFO is refused without blocking: `timeout 10` turns a hang into a failure).
expect_error "oversized .npy header" "header claims [0-9]+ bytes, more than" "$nsv" ns --input "$work/oversized_header.npy" --output "$o"
expect_error "huge shape in a tiny .npy" "\(65536, 65536\).*needs [0-9]+ bytes, the file holds" "$nsv" ns --input "$work/huge_shape.npy" --output "$o"
expect_error "shape with trailing garbage" "malformed header.*after the value of 'shape'" "$nsv" ns --input "$work/shape_garbage.npy" --output "$o"
expect_error "shape (1<<62, 2)" "malformed header.*dimension" "$nsv" ns --input "$work/shape_shift.npy" --output "$o"
expect_error "shape size overflows" "too large.*overflows" "$nsv" ns --input "$work/shape_overflow.npy" --output "$o"
expect_error "shape integer out of range" "out of range" "$nsv" ns --input "$work/shape_out_of_range.npy" --output "$o"
expect_error "FIFO as --input" "fifo.*named pipe \(FIFO\), not a regular file" timeout 10 "$nsv" ns --input "$work/fifo" --output "$o"
expect_error "FIFO as --coeffs" "fifo.*coefficient file is a named pipe" timeout 10 "$nsv" ns --input "$work/good.npy" --coeffs "$work/fifo" --output "$o"
expect_error "FIFO as --config" "fifo.*model config is a named pipe" timeout 10 "$nsv" audit --config "$work/fifo" --tp 2
expect_error "folder as --input" "--input.*directory" timeout 10 "$nsv" ns --input "$work/folder" --output "$o"
expect_error "folder as --coeffs" "folder.*coefficient file is a folder" timeout 10 "$nsv" ns --input "$work/good.npy" --coeffs "$work/folder" --output "$o"
expect_error "new output not created on error" "truncated" "$nsv" ns --input "$work/truncated.npy" --output "$work/fresh.npy"
# Numbers validated with the flag, the range and the value (not NaN, not out of range, not absurd).
expect_error "unknown command" "unknown command 'frobnicate'.*ns, shard" "$nsv" frobnicate
expect_error "--repeat 0" "--repeat" "$nsv" ns --input "$work/good.npy" --repeat 0
expect_error "--steps -1" "--steps" "$nsv" ns --input "$work/good.npy" --steps -1
expect_error "--restart-at -1" "--restart-at: must be steps between 0 and 1000" "$nsv" ns --input "$work/good.npy" --restart-at -1
expect_error "--restart-at 4,2" "--restart-at: must be steps between 0 and 1000, increasing.*got '4,2'" "$nsv" ns --input "$work/good.npy" --restart-at 4,2
expect_error "--restart-at 2,,4" "--restart-at: must be steps.*got '2,,4'" "$nsv" ns --input "$work/good.npy" --restart-at 2,,4
expect_error "--seed -1" "--seed: must be an integer between 0" "$nsv" shard --shape 16x32 --seed -1
expect_error "--heads 0" "--heads: must be an integer between 1 and" "$nsv" shard --shape 16x32 --heads 0
expect_error "--grain 0" "--grain: must be an integer between 1 and" "$nsv" shard --shape 16x32 --grain 0
expect_error "--tp 5000" "--tp" "$nsv" shard --shape 16x32 --tp 5000
expect_error "--lr nan" "--lr: must be a finite number" "$nsv" step --generate --lr nan
expect_error "--lr inf" "--lr: must be a finite number" "$nsv" step --generate --lr inf
expect_error "--momentum 2" "--momentum: must be a finite number between 0 and 1" "$nsv" step --generate --momentum 2
expect_error "--weight-decay -1" "--weight-decay: must be a finite number" "$nsv" step --generate --weight-decay -1
expect_error "--tflops nan" "--tflops: must be a finite number" "$nsv" audit --config "$work/nope.json" --tflops nan
expect_error "--link-gbps 0" "--link-gbps: must be a finite number" "$nsv" audit --config "$work/nope.json" --link-gbps 0
expect_error "--latency-us -1" "--latency-us: must be a finite number" "$nsv" audit --config "$work/nope.json" --latency-us -1
expect_error "audit --dp 0" "--dp" "$nsv" audit --config "$work/nope.json" --dp 0
expect_error "audit --dp-partition rows" "--dp-partition.*(zero|fsdp)" "$nsv" audit --config "$work/nope.json" --dp-partition rows
expect_error "sweep --threads 100000" "--threads: must be an integer between 1 and 1024" "$nsv" sweep --shapes 16x32 --threads 100000
expect_error "sweep --threads 0" "--threads: must be an integer between 1 and 1024" "$nsv" sweep --shapes 16x32 --threads 0
expect_error "report --threads 0" "--threads: must be an integer between 1 and 1024" "$nsv" report --threads 0 --out-dir "$work/report"
expect_error "sweep --seeds 2000000000" "--seeds: must be an integer between 1 and 100000" "$nsv" sweep --shapes 16x32 --seeds 2000000000
expect_error "sweep --restart-at 5000" "--restart-at" "$nsv" sweep --shapes 16x32 --restart-at 5000
expect_error "sweep --axis 2" "--axis" "$nsv" sweep --shapes 16x32 --axis 2
# Nothing to run is an error, not "0 cases" with success; the message says why each case was skipped.
expect_error "sweep: every case inapplicable (per_head without --heads)" "every case of this sweep is inapplicable.*per_head without --heads" \
  "$nsv" sweep --shapes 16x32 --tp 2 --strategy per_head --out "$work/out.csv"
expect_error "sweep --json: every case inapplicable (fused on dim 1)" "every case of this sweep is inapplicable.*AutoTP fuses column-parallel" \
  "$nsv" sweep --shapes 16x32 --tp 2 --axis 1 --fused gate_up --json
expect_error "sweep --fused qkv:megatron" "--fused must be one of none, qkv:glm, .*gate_up; got 'qkv:megatron'" "$nsv" sweep --shapes 24x32 --fused qkv:megatron --heads 2
expect_error "sweep --fused qkv:glm without --heads" "--fused qkv:glm needs --heads" "$nsv" sweep --shapes 24x32 --fused qkv:glm
expect_error "sweep --fused rows not heads" "--shapes 20x32 \\(axis 0, --fused qkv:phi3\\): 20 rows are not 8 heads" "$nsv" sweep --shapes 20x32 --fused qkv:phi3 --heads 4 --kv-heads 2
expect_error "sweep --fused gate_up, odd rows" "--fused gate_up\): a fused \[gate; up\] matrix needs an even row count" "$nsv" sweep --shapes 15x32 --fused gate_up
expect_error "shard --fused qkv:bigcode with 2 KV heads" "--kv-heads the bigcode layout has one shared K and V head" "$nsv" shard --shape 48x32 --fused qkv:bigcode --heads 4 --kv-heads 2
expect_error "shard --fused on axis 1" "--axis must be 0 for a fused matrix" "$nsv" shard --shape 48x32 --fused gate_up --axis 1
# Sizes checked before anything is allocated (under ulimit -v these would fail anyway: the
# message must say what to reduce, not "std::bad_alloc").
expect_error "shard --shape 65536x65536" "--shape asks for 65536x65536.*needs about .* GiB" "$nsv" shard --shape 65536x65536 --tp 2
expect_error "sweep --shapes 65536x65536" "--shapes asks for 65536x65536.*needs about" "$nsv" sweep --shapes 65536x65536 --out "$work/out.csv"
# The library's input limits (nsv/input_limits.hpp), read from a .npy header before its data: the
# files below are holes as large as their shapes claim.
expect_error "ns: a 70000x70000 .npy" "elements_70000x70000.npy: a 70000x70000 matrix holds 4900000000 elements, more than the 4294967296 \(2\^32, 65536x65536\) one call takes" "$nsv" ns --input "$work/elements_70000x70000.npy" --output "$o"
expect_error "shard: a 70000x70000 .npy" "a 70000x70000 matrix holds 4900000000 elements, more than the 4294967296" "$nsv" shard --input "$work/elements_70000x70000.npy" --tp 2
expect_error "ns: a batch of 100000 1000x1000 matrices" "a batch of 100000 matrices of 1000x1000 holds 100000000000 elements.*split the batch into calls of at most 4294 matrices" "$nsv" ns --input "$work/batch_100000x1000x1000.npy" --output "$o"
if [ "$memory_limit_kb" -gt 0 ]; then  # without a limit, a machine with the memory would run it
  expect_error "ns: a 30000x30000 .npy past the memory limit" "memory_30000x30000.npy asks for 30000x30000 \(Newton-Schulz in float64\), which needs about .* GiB, more than the .* this process may use" "$nsv" ns --input "$work/memory_30000x30000.npy" --output "$o"
fi
expect_error "ns: an empty batch .npy" "empty_batch.npy: an empty batch \(0 matrices of 4x4\) has no Newton-Schulz and no spectrum" "$nsv" ns --input "$work/empty_batch.npy" --output "$o"
expect_error "lowrank rank above the shape" "--spectrum lowrank:R needs R <= min\(rows, cols\) = 16" "$nsv" shard --shape 16x32 --spectrum lowrank:100000000
expect_error "step --hidden 1000000" "--hidden asks for a generated layer.*needs about" "$nsv" step --generate --hidden 1000000
expect_error "sweep with 1.4 million cases" "combinations, more than the 1000000" "$nsv" sweep --shapes 16x16 --seeds 20000 --tp 1,2,4,8 --strategy all --dtype fp32,bf16,fp16
# Inputs NS cannot orthogonalize, refused in every command (not all-zero "bit-identical" rows).
expect_error "shard: norm overflows fp32" "overflows fp32.*all zeros" "$nsv" shard --input "$work/huge.npy" --tp 2
expect_error "shard: NaN input" "NaN or Inf" "$nsv" shard --input "$work/nan.npy" --tp 2
expect_error "sweep: NaN file spectrum" "NaN or Inf" "$nsv" sweep --shapes 16x32 --spectrum "file:$work/nan.npy" --out "$work/out.csv"
expect_error "coefficient above 1000" "coefficient above 1000" "$nsv" ns --input "$work/good.npy" --coeffs "$work/coeffs_blowup.txt" --output "$o"
expect_error "NaN coefficient" "coeffs_nan.txt:1: expected" "$nsv" ns --input "$work/good.npy" --coeffs "$work/coeffs_nan.txt" --output "$o"
expect_error "1001 coefficient triples" "more than 1000 triples" "$nsv" ns --input "$work/good.npy" --coeffs "$work/coeffs_many.txt" --output "$o"
expect_error "non-finite result, nothing written" "holds NaN or Inf.*nothing was written" "$nsv" ns --input "$work/good.npy" --kernel standard --dtype fp16 --steps 3 --coeffs "$work/coeffs_big.txt" --output "$work/fresh.npy"
# An output that is one of the run's inputs is refused before anything runs.
expect_error "ns --output is --input" "--output .* is the --input file" "$nsv" ns --input "$work/good.npy" --output "$work/good.npy"
expect_error "sweep --out is the spectrum file" "--out .* is the --spectrum file" "$nsv" sweep --shapes 16x32 --spectrum "file:$work/good.npy" --out "$work/good.npy"
expect_error "sweep --out is the coefficient file" "--out .* is the --coeffs file" "$nsv" sweep --shapes 16x32 --coeffs "$work/coeffs_nan.txt" --out "$work/coeffs_nan.txt"
# --resume checks every field of every kept row, and never changes a file it refuses.
"$nsv" sweep --shapes 8x8 --tp 2 --quiet --out "$work/sweep.csv" >/dev/null || echo "FAIL: could not write the resume fixture"
damage() {  # $1 name, $2 column (by its header name), $3 the field's new text ("&": the old text)
  awk -F, -v OFS=, -v col="$2" -v val="$3" \
    'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; print; next } { v = val; gsub(/&/, $c, v); $c = v; print }' \
    "$work/sweep.csv" >"$work/$1.csv"
}
damage cosine7 cosine 7
damage noncanonical norm_ratio '&e0'
damage ranks rel_diff_ranks 0.5
damage negative rel_diff_mean -1
{ echo "rows,cols,something"; tail -n 1 "$work/sweep.csv"; } >"$work/oldheader.csv"
cp "$work"/{cosine7,noncanonical,ranks,negative,oldheader}.csv "$work/folder/"
for f in cosine7:"cosine is outside" noncanonical:"not how nsv writes" ranks:"rel_diff_ranks holds 1 values for tp 2" \
         negative:"negative" oldheader:"does not start with this version's sweep header"; do
  expect_error "resume: ${f%%:*}" "${f#*:}" "$nsv" sweep --shapes 8x8 --tp 2 --quiet --resume --out "$work/${f%%:*}.csv"
  cmp -s "$work/${f%%:*}.csv" "$work/folder/${f%%:*}.csv" || { echo "FAIL: resume ${f%%:*} changed the file"; failed=$((failed + 1)); }
done
# Gradient folders: the description is validated field by field, every message names the file.
expect_error "grads.json: 0 heads" "grads.json: \"model\".num_attention_heads must be between 1" "$nsv" step --grads "$work/heads0"
expect_error "grads.json: nested value" "num_attention_heads must be a positive integer, got a JSON array" "$nsv" step --grads "$work/heads_nested"
expect_error "grads.json: invalid JSON" "grads.json is not valid JSON" "$nsv" step --grads "$work/badjson"
expect_error "gradient of the wrong shape" "wrongshape/step0/q_proj.npy is 3x3" "$nsv" step --grads "$work/wrongshape"
expect_error "--grads not a folder" "no gradient folder" "$nsv" step --grads "$work/good.npy"
expect_error "config: deeply nested value" "config|hidden_size" timeout 20 "$nsv" audit --config "$work/deep.json" --tp 2
# Issue 27 item 5, one case per class: explicit refusals of what used to be read as garbage,
# outputs that would overwrite an input or follow a symlink, dumps checked before they are read.
fx="$(cd "$(dirname "$0")/../../fixtures" && pwd)"
cp "$fx/models/tiny-llama.json" "$work/config.json"; cp "$work/config.json" "$work/config.orig"
expect_error "audit: a mesh beyond 65536 ranks" "--dp makes a mesh of tp x dp = 81920 ranks; at most 65536" "$nsv" audit --config "$work/config.json" --tp 8 --dp 10240
expect_error "big-endian .npy" "element type >f4 is not supported.*little-endian" "$nsv" ns --input "$work/big_endian.npy" --output "$o"
expect_error "empty .npy" "empty|0x32|at least one" "$nsv" ns --input "$work/empty.npy" --output "$o"
expect_error "diagnose --output is its config" "--output|config.json is the model config this run reads" \
  "$nsv" diagnose --config "$work/config.json" --tp 2 --kernel standard --reference "$fx/runs/reference" \
  --candidate "$fx/runs/tp2,$fx/runs/tp2/shard" --output "$work/config.json"
cmp -s "$work/config.json" "$work/config.orig" || { echo "FAIL: diagnose --output overwrote its config"; failed=$((failed + 1)); }
ln -s "$work/out.csv" "$work/linked.csv.partial"
expect_error "sweep: OUT.partial is a symlink" "symbolic link|symlink" "$nsv" sweep --shapes 8x8 --tp 2 --quiet --out "$work/linked.csv"
rm -f "$work/linked.csv.partial"
expect_error "diagnose: a dump of another model's shape" "is 256x256, but rank 0's shard of .* at tp = 2 is 128x256|shard" \
  "$nsv" diagnose --config "$work/config.json" --tp 2 --kernel standard --reference "$fx/runs/reference" \
  --candidate "$fx/runs/reference" --output "$work/out.npy"
[ -e "$work/missing" ] && { echo "FAIL: a failed write created $work/missing"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
