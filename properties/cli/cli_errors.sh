#!/usr/bin/env bash
# Bad input never crashes and never yields silent garbage: every case below must exit non-zero,
# print a message that names the problem, and leave an existing output file byte for byte as it
# was. Usage: cli_errors.sh NSV_BINARY (needs /usr/bin/python3 with numpy to write test inputs).
set -u
nsv="$1"
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
[ -e "$work/missing" ] && { echo "FAIL: a failed write created $work/missing"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
