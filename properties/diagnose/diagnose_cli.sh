#!/usr/bin/env bash
# `nsv diagnose` on the checked-in runs (fixtures/runs) says, in words, which semantics each run's
# optimizer computed on the attention matrices: "per-shard NS, local-shape scale" for AutoTP's
# behaviour today, "whole-matrix NS, exact" for gather, "per-head NS" for per-head on q/k/v; in
# text, markdown and JSON. Usage: diagnose_cli.sh NSV_BINARY FIXTURES_DIR
set -u
nsv="$1" fixtures="$2"
runs="$fixtures/runs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() {  # $1: what, $2: file, $3: regex that a line must match
  if grep -qE -e "$3" "$2"; then passed=$((passed + 1)); echo "ok: $1"
  else failed=$((failed + 1)); echo "FAIL: $1: no line matches /$3/"; cat "$2"; fi
}
diagnose() {  # $1: tp, $2: run, rest: more flags
  local tp="$1" run="$2"; shift 2
  "$nsv" diagnose --config "$fixtures/models/tiny-llama.json" --tp "$tp" --kernel standard \
    --muon lr=0.02,momentum=0.95,nesterov=true,wd=0 --reference "$runs/reference" \
    --candidate "$runs/tp$tp,$runs/tp$tp/$run" "$@"
}
for tp in 2 4; do
  for run in shard gather per_head; do
    out="$work/$tp-$run.txt"
    if ! diagnose "$tp" "$run" >"$out" 2>&1; then failed=$((failed + 1)); echo "FAIL: tp $tp $run: exit non-zero"; cat "$out"; continue; fi
    case $run in
      shard) q="per-shard NS, local-shape scale"; o="per-shard NS, local-shape scale"; inv=no ;;
      gather) q="whole-matrix NS, exact"; o="whole-matrix NS, exact"; inv=yes ;;
      per_head) q="per-head NS"; o="whole-matrix NS, exact"; inv=no ;;
    esac
    # the candidate line of each matrix's block (blocks start with the matrix's HF name)
    awk '/^model\.layers\.0\.self_attn\.q_proj/{m="q"} /^model\.layers\.0\.self_attn\.o_proj/{m="o"} /^  candidate/{print m": "$0}' "$out" >"$work/c"
    check "tp $tp $run: q_proj computes $q" "$work/c" "^q:   candidate  $q( \(|$)"
    check "tp $tp $run: o_proj computes $o" "$work/c" "^o:   candidate  $o( \(|$)"
    check "tp $tp $run: the reference computes whole-matrix NS" "$out" "^  reference  whole-matrix NS, exact"
    check "tp $tp $run: q_proj tp-invariant: $inv" "$out" "^  tp-invariant: $inv"
  done
done
diagnose 2 shard --markdown >"$work/md" 2>&1
check "markdown: the seed's table columns" "$work/md" "^\| matrix \| shards \| grad rel. diff \| update rel. diff \| cosine \| norm ratio"
check "markdown: q_proj row names AutoTP's semantics" "$work/md" "^\| model.layers.0.self_attn.q_proj.weight .*\| per-shard NS, local-shape scale"
diagnose 2 per_head --json --output "$work/d.json" >"$work/stdout" 2>&1
if /usr/bin/python3 - "$work/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "nsv.diagnose/1", d["schema"]
got = {p["matrix"]: (p["reference"]["match"], p["candidate"]["match"], p["tp_invariant"]) for p in d["params"]}
assert got == {"q_proj": ("whole", "per_head", False), "o_proj": ("whole", "whole", True)}, got
for p in d["params"]:
    for f in p["candidate"]["fits"]:
        assert (f["rel_diff"] <= f["bound"]) == f["within"], f
PY
then passed=$((passed + 1)); echo "ok: --json --output: schema and matches"; else failed=$((failed + 1)); echo "FAIL: --json"; fi
[ -s "$work/stdout" ] && { failed=$((failed + 1)); echo "FAIL: --output also printed to stdout"; }
# The other naming conventions give the same verdicts: the reference as .npy folders
# ({kind}.rank0/{HF name}.npy), the candidate as one file with kind- and rank-suffixed names.
/usr/bin/python3 - "$runs" "$work" <<'PY'
import json, os, struct, sys
import numpy as np
runs, work = sys.argv[1], sys.argv[2]
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]], "<f4").reshape(v["shape"])
            for k, v in h.items() if k != "__metadata__"}
for kind in ("grad", "momentum", "weight", "delta"):
    os.makedirs("%s/npy/%s.rank0" % (work, kind))
    for name, a in read("%s/reference/%s.safetensors" % (runs, kind)).items():
        np.save("%s/npy/%s.rank0/%s.npy" % (work, kind, name), a)
merged, offset, blobs = {}, 0, []
for kind, folder in (("grad", "tp2"), ("momentum", "tp2"), ("weight", "tp2"), ("delta", "tp2/shard")):
    for r in (0, 1):
        for name, a in read("%s/%s/%s.rank%d.safetensors" % (runs, folder, kind, r)).items():
            suffix = "" if kind == "weight" else "." + kind
            merged[name + suffix + ".rank%d" % r] = a
# weights have no tensor-name kind: they go to their own file
header, data = {}, b""
for name, a in merged.items():
    if name.endswith((".rank0", ".rank1")) and ".weight.rank" in name:
        continue
    header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [len(data), len(data) + a.nbytes]}
    data += a.tobytes()
h = json.dumps(header).encode()
open("%s/tp2_all.safetensors" % work, "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
"$nsv" diagnose --config "$fixtures/models/tiny-llama.json" --tp 2 --kernel standard \
  --reference "$work/npy/grad.rank0,$work/npy/momentum.rank0,$work/npy/weight.rank0,$work/npy/delta.rank0" \
  --candidate "$work/tp2_all.safetensors,$runs/tp2/weight.rank0.safetensors,$runs/tp2/weight.rank1.safetensors" >"$work/conv" 2>&1
awk '/^model\.layers\.0\.self_attn\.q_proj/{m="q"} /^model\.layers\.0\.self_attn\.o_proj/{m="o"} /^  (candidate|reference)/{print m": "$0}' "$work/conv" >"$work/c"
check ".npy folders + rank-suffixed names: q_proj per-shard" "$work/c" "^q:   candidate  per-shard NS, local-shape scale( \(|$)"
check ".npy folders + rank-suffixed names: o_proj per-shard" "$work/c" "^o:   candidate  per-shard NS, local-shape scale( \(|$)"
check ".npy folders: the reference computes whole-matrix NS" "$work/c" "^q:   reference  whole-matrix NS, exact"
# The README's numpy snippet writes dump/KIND.rankR/NAME.npy; the folder `dump` itself is read
# (its subfolders, one level), with the same verdicts, and runs that start from the same weights
# get no warning.
snippet() {  # $1: reference folder, rest: more flags
  local ref="$1"; shift
  "$nsv" diagnose --config "$fixtures/models/tiny-llama.json" --tp 2 --kernel standard \
    --muon lr=0.02,momentum=0.95,nesterov=true,wd=0 --reference "$ref" --candidate "$runs/tp2,$runs/tp2/shard" "$@"
}
snippet "$work/npy" >"$work/snip" 2>&1
awk '/^model\.layers\.0\.self_attn\.q_proj/{m="q"} /^  (candidate|reference)/{print m": "$0}' "$work/snip" >"$work/c"
check "the snippet's folder dump/KIND.rankR/NAME.npy: the reference computes whole-matrix NS" "$work/c" "^q:   reference  whole-matrix NS, exact"
check "the snippet's folder: q_proj per-shard" "$work/c" "^q:   candidate  per-shard NS, local-shape scale( \(|$)"
if grep -q "weights before the step differ" "$work/snip"; then failed=$((failed + 1)); echo "FAIL: a warning about weights for runs with the same weights"; else passed=$((passed + 1)); fi
# Negative control: one weight of the reference changed by 2^-10 relative is named, with its figure
# (the reference is the changed run: rel. diff 2^-10 / (1 + 2^-10) = 9.76e-04), in the text
# and, under --json --output, on stderr.
cp -r "$work/npy" "$work/npy_w"
/usr/bin/python3 -c 'import numpy as np, sys; f = sys.argv[1]; np.save(f, np.load(f) * np.float32(1 + 2**-10))' \
  "$work/npy_w/weight.rank0/model.layers.0.self_attn.o_proj.weight.npy"
snippet "$work/npy_w" >"$work/snip_w" 2>&1
check "weights that differ: warned in the text, with the figure" "$work/snip_w" \
  "^warning: the weights before the step differ between the runs for 1 of 2 matrices \(largest rel\. diff 0\.000976, model\.layers\.0\.self_attn\.o_proj\.weight\)"
snippet "$work/npy_w" --json --output "$work/w.json" >"$work/snip_j" 2>&1
check "weights that differ: warned on stderr under --json --output" "$work/snip_j" "^warning: the weights before the step differ"
if /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); w = {p["matrix"]: p["weight"]["bit_identical"] for p in d["params"]}; assert w == {"q_proj": True, "o_proj": False}, w' "$work/w.json"
then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: the JSON's weight comparison"; fi
# A run dumped at tp 4 holds ranks 0..3: diagnosed as tp 3 (ranks 0..2) it is refused, naming
# the rank that does not exist (the limit itself: the largest rank equals the tp given).
if "$nsv" diagnose --config "$fixtures/models/tiny-llama.json" --tp 3 --kernel standard \
     --muon lr=0.02,momentum=0.95,nesterov=true,wd=0 --reference "$runs/reference" \
     --candidate "$runs/tp4,$runs/tp4/shard" >"$work/rank3" 2>&1; then
  failed=$((failed + 1)); echo "FAIL: a tp-4 run diagnosed as tp 3 was accepted"
elif grep -q "holds tensors of rank 3, but tp = 3 has ranks 0..2" "$work/rank3"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: a tp-4 run diagnosed as tp 3: $(head -c 300 "$work/rank3")"
fi
echo "diagnose_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
