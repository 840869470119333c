#!/usr/bin/env python3
"""Benchmark (not a timed test): earlier commits' builds beside the current one, side by side in one run.

    /usr/bin/python3 tools/bench/regression.py --against COMMIT[,COMMIT...] [--build build]
        [--shapes 1024x4096] [--kernels standard,gram] [--rounds 3] [--overhead] [--torch] [--json FILE] [--markdown FILE]

Builds each COMMIT in a git worktree of its own (BUILD/regression/COMMIT, kept for the next run), then times
`nsv ns --steps 5 --dtype fp32 --repeat 5 --json` of every build on the same standard-normal fp32 matrix,
rotating which build goes first from round to round, on one thread (OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1). Each row gives each build's median over the rounds (each round's figure is nsv's
own median of 5 calls), their spread, the ratio current / earlier and whether the current output is
bit-identical to each earlier one (a speed change with the same bits is the work around the arithmetic,
not the arithmetic). --overhead adds the checker's overhead stage (tools/bench/nsverify_overhead.py at
512x1024) on every build's Python package; --torch adds PyTorch 1.13's CPU NS (tools/bench/torch_ns.py) to the
rotation, as the issue's table had it. Run it against the last landing before a stop that touches lib/, checks/ or the
build; reports/performance.md keeps its table (--markdown writes it).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def commit_of(rev):
    try:
        return sh(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"]).strip()
    except subprocess.CalledProcessError:
        raise SystemExit(f"regression.py: --against {rev!r}: not a commit of this repository")


def build(source, build_dir, targets):
    """Configures (once) and builds `targets` of the tree at `source` into build_dir, as tools/setup.sh does."""
    if not (build_dir / "build.ninja").exists():
        print(f"== configuring {build_dir}", file=sys.stderr)
        sh(["cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
            "-DNSV_WITH_CUDA=OFF"])
    print(f"== building {' '.join(targets)} in {build_dir}", file=sys.stderr)
    subprocess.run(["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 1), "--target", *targets],
                   check=True, stdout=subprocess.DEVNULL)


def nsv_binary(build_dir):
    """The `nsv` executable of a build folder: cli/nsv, or tools/nsv/nsv in a build of a commit
    from before the CLI left tools/."""
    moved = build_dir / "cli" / "nsv"
    return moved if moved.exists() else build_dir / "tools" / "nsv" / "nsv"


def earlier_build(sha, build_root, targets):
    """The earlier commit's worktree and build folder, made on first use."""
    tree = build_root / "regression" / sha[:12] / "src"
    if not tree.exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        sh(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha])
    build(tree, tree.parent / "build", targets)
    return tree, tree.parent / "build"


def ns_seconds(nsv, matrix, kernel, output):
    out = sh([str(nsv), "ns", "--input", str(matrix), "--kernel", kernel, "--steps", "5", "--dtype", "fp32",
              "--repeat", "5", "--json", "--output", str(output)], env=dict(os.environ, **ONE_THREAD))
    return json.loads(out)["seconds"]


def torch_seconds(shape, kernel, work):
    """PyTorch 1.13's CPU NS (tools/bench/torch_ns.py's transcription of DeepSpeed's kernels) at the same shape:
    the median of 5 calls, one thread, fp32."""
    out = work / "torch.json"
    out.unlink(missing_ok=True)
    sh([sys.executable, str(ROOT / "tools/bench/torch_ns.py"), "--threads", "1", "--shapes", shape, "--kernels", kernel,
        "--dtypes", "fp32", "--repeat", "5", "--no-sgemm", "--json", str(out)], env=dict(os.environ, **ONE_THREAD))
    return json.loads(out.read_text())[0]["seconds_median"]


def overhead(python_dir, tree):
    """nsverify_overhead.py's rows at 512x1024 with a build's Python package (the tree's own script)."""
    with tempfile.TemporaryDirectory(prefix="nsv-overhead-") as work:
        rows = pathlib.Path(work) / "rows.json"
        subprocess.run([sys.executable, str(tree / "tools/bench/nsverify_overhead.py"), "--shapes", "512x1024",
                        "--cases", "4", "--json", str(rows)], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=str(python_dir)))
        return {r["code"]: r for r in json.loads(rows.read_text())}


def write_new(path, text, option):
    try:
        with open(path, "x") as out:  # never overwrites a file nor follows a link to one
            out.write(text)
    except FileExistsError:
        raise SystemExit(f"regression.py: {option}: {path} exists; name a new file")


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--against", required=True,
                   help="the earlier commit(s), comma-separated (e.g. the last landing), each a column of its own")
    p.add_argument("--build", default=str(ROOT / "build"), help="the current build folder (default build/)")
    p.add_argument("--shapes", default="1024x4096", help="ROWSxCOLS list (default 1024x4096)")
    p.add_argument("--kernels", default="standard,gram", help="kernel list (default standard,gram)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each build once per round (default 3)")
    p.add_argument("--overhead", action="store_true", help="also the checker's overhead stage at 512x1024")
    p.add_argument("--torch", action="store_true",
                   help="also PyTorch's CPU NS (tools/bench/torch_ns.py) in the same rotation, a column of its own")
    p.add_argument("--json", help="write the figures here (a new file)")
    p.add_argument("--markdown", help="write the table here (a new file; for reports/performance.md)")
    a = p.parse_args()
    if a.rounds < 1:
        p.error(f"--rounds must be at least 1, got {a.rounds}")
    import numpy as np

    earlier = [commit_of(rev) for rev in a.against.split(",")]
    head = commit_of("HEAD")
    current = pathlib.Path(a.build).resolve()
    targets = ["nsv"] + (["_nsverify"] if a.overhead else [])
    build(ROOT, current, targets)
    trees = {sha[:10]: earlier_build(sha, current, targets) for sha in earlier}
    names = list(trees) + ["current"] + (["PyTorch"] if a.torch else [])
    builds = {name: nsv_binary(build_dir) for name, (_, build_dir) in trees.items()}
    builds["current"] = nsv_binary(current)

    rows = []
    with tempfile.TemporaryDirectory(prefix="nsv-regression-") as work:
        work = pathlib.Path(work)
        for shape in a.shapes.split(","):
            r, c = (int(x) for x in shape.split("x"))
            matrix = work / f"G_{shape}.npy"
            np.save(matrix, np.random.default_rng(0).standard_normal((r, c)).astype(np.float32))
            for kernel in a.kernels.split(","):
                seconds = {name: [] for name in names}
                for k in range(a.rounds):
                    for name in names[k % len(names):] + names[:k % len(names)]:  # who goes first rotates
                        seconds[name].append(torch_seconds(shape, kernel, work) if name == "PyTorch" else
                                             ns_seconds(builds[name], matrix, kernel, work / f"{name}.npy"))
                        print(f"   {kernel} {shape} round {k + 1} {name}: {seconds[name][-1]:.4f} s", file=sys.stderr)
                out = (work / "current.npy").read_bytes()
                rows.append(dict(kernel=kernel, shape=shape, seconds={n: spread(v) for n, v in seconds.items()},
                                 bit_identical={n: (work / f"{n}.npy").read_bytes() == out for n in trees}))
    result = dict(earlier=earlier, current=head, rounds=a.rounds, threads=1, rows=rows,
                  command="nsv ns --input G.npy --kernel K --steps 5 --dtype fp32 --repeat 5 --json",
                  machine=(sh(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).strip() or "unknown"))
    if a.overhead:
        result["overhead"] = {name: overhead(build_dir / "python", tree) for name, (tree, build_dir) in trees.items()}
        result["overhead"]["current"] = overhead(current / "python", ROOT)

    cell = lambda s: f"{s['median']:.3f} s ({s['min']:.3f}-{s['max']:.3f})"
    table = [f"Earlier builds {', '.join(trees)} beside the current {head[:10]}, one run on one machine "
             f"({result['machine']}), {a.rounds} rounds rotating which build goes first, one thread; each figure the "
             f"median over the rounds of nsv's own median of 5 calls (`{result['command']}`), min-max in brackets; "
             "ratio: current / earlier; bits: the current output against each earlier one.", "",
             "| kernel | shape | " + " | ".join(names) + " | " + " | ".join(f"ratio to {n}" for n in trees) +
             (" | PyTorch / current" if a.torch else "") + " | bits |",
             "|---|---|" + "---|" * (len(names) + len(trees) + 1 + a.torch)]
    for row in rows:
        t = row["seconds"]
        bits = ", ".join(f"{'identical to' if same else 'differ from'} {n}" for n, same in row["bit_identical"].items())
        table.append(f"| {row['kernel']} | {row['shape']} | " + " | ".join(cell(t[n]) for n in names) + " | " +
                     " | ".join(f"{t['current']['median'] / t[n]['median']:.3f}" for n in trees) +
                     (f" | {t['PyTorch']['median'] / t['current']['median']:.2f}x" if a.torch else "") + f" | {bits} |")
    if a.overhead:
        over = result["overhead"]
        table += ["", "The checker's own time per case at 512x1024 (tools/bench/nsverify_overhead.py, 4 cases, the numpy "
                  "kernel on the machine's OpenBLAS threads), nsverify's ms per case:", "",
                  "| property | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for code in over["current"]:
            table.append(f"| {code} | " + " | ".join(f"{1e3 * over[n][code]['nsverify_s']:.1f}" if code in over[n] else "-"
                                                  for n in names) + " |")
    text = "\n".join(table) + "\n"
    print(text)
    if a.json:
        write_new(a.json, json.dumps(result, indent=2) + "\n", "--json")
    if a.markdown:
        write_new(a.markdown, text, "--markdown")


if __name__ == "__main__":
    main()
