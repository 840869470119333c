#!/usr/bin/env bash
# `nsv shard --comm mpi --json` under mpirun: README's `mpi.handed` lists, per rank and collective,
# the MPI calls and the bytes of the buffers handed to MPI. Claim, for gather of a 12 x 16 matrix
# over 3 processes (rows split 4, 4, 4): one entry per rank, each with the all-gather written out
# by hand from README's wire rules -- two calls (the shape first, two 8-byte integers, then the
# shard as float64), 16 + 8 * 4 * 16 = 528 bytes handed to send, and every rank's 528 to receive
# (3 * 528 = 1584); no all-reduce and no all-to-all.
# What makes it independent: the figures come from the wire rules, not from the library's byte
# model (the gate's mpi_ranks_* check handed() against a count interposed on MPI itself; this is
# the per-rank collection of it into the JSON, which only world rank 0 prints). It can fail: the
# mutant that collects on rank 1 instead of 0 (mpi_communicator.cpp, gather_handed) leaves one entry.
# Usage: mpi_shard_json.sh NSV_BINARY
set -u
nsv="$1"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! timeout 120 mpirun --oversubscribe -np 3 "$nsv" shard --comm mpi --shape 12x16 --tp 3 --strategy gather --json >"$out" 2>&1; then
  echo "FAIL: mpirun -np 3 nsv shard --comm mpi --json: $(tail -c 600 "$out")"
  exit 1
fi
# Ranks started with other arguments (an MPMD line: rank 1 with --steps 3, rank 0 with 5) are refused
# by every rank before any collective, naming the rank and the argument, instead of mixing plans.
if timeout 120 mpirun --oversubscribe -np 1 "$nsv" shard --comm mpi --shape 12x16 --tp 2 --strategy gather --steps 5 --json : \
     -np 1 "$nsv" shard --comm mpi --shape 12x16 --tp 2 --strategy gather --steps 3 --json >"$out.mix" 2>&1; then
  echo "FAIL: ranks with different --steps were run: $(tail -c 600 "$out.mix")"; rm -f "$out.mix"; exit 1
elif ! grep -q "rank 1 of 2 was started with another plan than rank 0: steps is 3 there and 5 on rank 0" "$out.mix"; then
  echo "FAIL: ranks with different --steps: not refused by name: $(tail -c 600 "$out.mix")"; rm -f "$out.mix"; exit 1
fi
echo "ok: ranks with different --steps refused: $(grep -m1 -o 'rank 1 of 2 was started.*' "$out.mix" | head -c 160)"
rm -f "$out.mix"
exec /usr/bin/python3 - "$out" <<'PY'
import json, sys
handed = json.load(open(sys.argv[1])).get("mpi", {}).get("handed", [])
want = {"all_gather": {"mpi_calls": 2, "send_buffer_bytes": 528, "receive_buffer_bytes": 1584},
        "all_reduce": {"mpi_calls": 0, "send_buffer_bytes": 0, "receive_buffer_bytes": 0},
        "all_to_all": {"mpi_calls": 0, "send_buffer_bytes": 0, "receive_buffer_bytes": 0}}
failed = 0
if len(handed) != 3:
    print(f"FAIL: mpi.handed has {len(handed)} entries, one per rank wanted (3)")
    failed = 1
for rank, got in enumerate(handed):
    ok = got == want
    print(("ok" if ok else "FAIL") + f": rank {rank} handed {got}" + ("" if ok else f", by hand {want}"))
    failed |= not ok
sys.exit(1 if failed else 0)
PY
