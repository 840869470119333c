#!/usr/bin/env bash
# A catalogue of malformed safetensors dumps, built here (none is checked in), each given to
# `nsv diagnose` as the reference: every one must exit with a status in 1..127, print a message
# that names the file (and the tensor, where one is concerned) and what is wrong, and leave the
# folder as it was (no output file created, an existing one untouched).
# Usage: safetensors_errors.sh NSV_BINARY FIXTURES_DIR (needs /usr/bin/python3).
set -u
nsv="$1" fixtures="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bad" "$work/empty_folder"
# Each case: a file in $work/bad and a line "name|pattern" in $work/cases (pattern: what the
# message must also say, beyond the file's name).
/usr/bin/python3 - "$work/bad" >"$work/cases" <<'PY'
import json, struct, sys
d = sys.argv[1]
Q = "model.layers.0.self_attn.q_proj.weight"
def frame(header, data=b"", length=None):
    h = header if isinstance(header, bytes) else header.encode()
    return struct.pack("<Q", len(h) if length is None else length) + h + data
def entry(dtype="F32", shape=(256, 256), begin=0, end=None):
    n = 1
    for s in shape: n *= s
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, begin + 4 * n if end is None else end]}
full = bytes(4 * 256 * 256)
def case(name, content, pattern):
    open("%s/%s.grad.safetensors" % (d, name), "wb").write(content)
    print("%s|%s" % (name, pattern))
case("empty", b"", "fewer than the 8")
case("five_bytes", b"\x01\x02\x03\x04\x05", "fewer than the 8")
case("length_past_end", frame(json.dumps({Q: entry()}), full, length=10**6), "truncated")
case("length_over_limit", frame("{}", b"", length=100_000_001), "limit of 100000000")
case("not_an_object", frame("[1, 2, 3]"), "does not start with")
case("not_json", frame('{"%s": {"dtype": "F32",' % Q), "not valid JSON")
case("number_out_of_range", frame('{"%s": {"dtype": "F32", "shape": [256, 256], "data_offsets": [0, 1e999]}}' % Q), "cannot be read.*number overflow")
case("name_not_utf8", frame(b'{"model.layers.0.\xff.q_proj.weight": {}}'), "UTF-8")
case("duplicate_name", frame('{"%s": %s, "%s": %s}' % (Q, json.dumps(entry()), Q, json.dumps(entry()))), "twice")
case("unknown_dtype", frame(json.dumps({Q: entry(dtype="F33")}), full), "tensor '%s'.*unknown dtype" % Q)
case("integer_dtype", frame(json.dumps({Q: entry(dtype="I32")}), full), "tensor '%s'.*I32 is not supported" % Q)
case("shape_byte_mismatch", frame(json.dumps({Q: entry(shape=(256, 255), end=len(full))}), full), "tensor '%s'.*needs" % Q)
k = "model.layers.0.self_attn.k_proj.weight"
case("overlap", frame(json.dumps({Q: entry(), k: entry(begin=len(full) - 8)}), full * 2), "tensor '%s'.*overlap" % k)
case("gap", frame(json.dumps({Q: entry(), k: entry(begin=len(full) + 4)}), full * 2 + bytes(4)), "tensor '%s'.*to no tensor" % k)
case("past_the_end", frame(json.dumps({Q: entry()}), full[:-4]), "tensor '%s'.*past the end" % Q)
case("trailing_bytes", frame(json.dumps({Q: entry()}), full + b"junk"), "trailing bytes")
case("negative_dimension", frame(json.dumps({Q: {"dtype": "F32", "shape": [-256, 256], "data_offsets": [0, 0]}})), "tensor '%s'.*non-negative" % Q)
case("control_character", frame(json.dumps({Q + "\u0007": entry()}), full), "control character")
case("metadata_not_strings", frame(json.dumps({"__metadata__": {"step": 3}, Q: entry()}), full), "__metadata__")
case("no_offsets", frame(json.dumps({Q: {"dtype": "F32", "shape": [256, 256]}}), full), "tensor '%s'.*no \"data_offsets\"" % Q)
case("overflowing_shape", frame(json.dumps({Q: entry(shape=(2**40, 2**40), end=0)})), "tensor '%s'.*overflows" % Q)
case("matrix_not_2d", frame(json.dumps({Q: entry(shape=(65536,))}), full), "%s.*2-D" % Q)
case("wrong_shard_shape", frame(json.dumps({Q: entry(shape=(128, 256))}), full[: len(full) // 2]), "tensor .%s. is 128x256, but %s of this model is 256x256" % (Q, Q))
nan = struct.pack("<f", float("nan")) + bytes(len(full) - 4)
case("nan", frame(json.dumps({Q: entry()}), nan), "tensor '%s' holds NaN" % Q)
open("%s/dump.safetensors" % d, "wb").write(frame(json.dumps({Q: entry()}), full))
print("dump|no kind")
PY
echo precious >"$work/out.txt"
cp "$work/out.txt" "$work/out.orig"
passed=0 failed=0
run_case() {  # $1: name, $2: pattern, $3: reference path, $4: the name the message must carry
  local name="$1" pattern="$2" ref="$3" file="$4" out rc before
  before=$(ls -A "$work" "$work/bad")
  out=$(timeout 60 "$nsv" diagnose --config "$fixtures/models/tiny-llama.json" --tp 2 --kernel standard --reference "$ref" \
        --candidate "$fixtures/runs/tp2,$fixtures/runs/tp2/shard" --output "$work/out.txt" 2>&1); rc=$?
  if [ $rc -eq 0 ] || [ $rc -gt 127 ] || [ $rc -eq 124 ]; then
    echo "FAIL: $name: exit $rc: $out"; failed=$((failed + 1)); return
  fi
  if ! grep -qF -e "$file" <<<"$out" || ! grep -qE -e "$pattern" <<<"$out"; then
    echo "FAIL: $name: the message does not name $file and /$pattern/: $out"; failed=$((failed + 1)); return
  fi
  if ! cmp -s "$work/out.txt" "$work/out.orig" || [ "$(ls -A "$work" "$work/bad")" != "$before" ]; then
    echo "FAIL: $name: a file was written"; failed=$((failed + 1)); return
  fi
  echo "ok: $name (exit $rc) -> $(head -c 200 <<<"$out")"
  passed=$((passed + 1))
}
while IFS='|' read -r name pattern; do
  file="$name.grad.safetensors"; [ "$name" = dump ] && file=dump.safetensors
  run_case "$name" "$pattern" "$work/bad/$file" "$file"
done <"$work/cases"
run_case "folder without dumps" "no .safetensors or .npy" "$work/empty_folder" "empty_folder"
run_case "missing file" "cannot open" "$work/bad/missing.grad.safetensors" "missing.grad.safetensors"
echo "safetensors_errors: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -ge 15 ]
