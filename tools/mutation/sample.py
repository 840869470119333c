#!/usr/bin/python3
"""Mechanical mutation sampler: how many bugs nobody planted does the gate catch?

Enumerates every mutation site of the library's and the CLI's sources (tools/mutation/sites.py:
operator swaps, off-by-one constants, negated conditions, deleted statements, swapped
arguments), shuffles them with a seed, and tries them in that order on a scratch copy of the
tree: apply one, rebuild incrementally, run the gate until its first failure, restore. A mutant
that does not compile is stillborn and does not count; the run stops when N mutants compiled.

Every verdict is appended to a results file as it is reached, so a run interrupted (or cut by
--time-budget) resumes where it stopped, and runs at later commits add to the same sample.
Survivors are triaged by hand in the triage file (equivalent, with the reason; or killed by a
new property, which --rerun-survivors verifies by running them again). The report is rendered
from the results and the triage.

  tools/mutation/sample.py --sample 150 --seed 20261202 --scratch ../nsv-mutation
  tools/mutation/sample.py --list --sample 20          # the first 20 sites of the sample
  tools/mutation/sample.py --rerun-survivors           # after adding properties
  tools/mutation/sample.py --rerun-survivors --again   # after moving code: every killed survivor again
  tools/mutation/sample.py --patches                   # the hand-written mutants, properties/mutants/*.patch
  tools/mutation/sample.py --render-only

The hand-written mutants are one more source of mutants (tools/mutation/patches.py): judged by the
same gate on the same scratch copy, but on the whole gate, so that each row lists every test that
killed it; their rows (source "patch", no seed) go to the same results file and never count in the
sample's score. reports/mutation.md and reports/mutation_handwritten.md are rendered from the
results by the report renderer (tools/report/nsvreport/mutation.py; `python3 tools/report mutation`).

The scratch folder must be outside the repository. Beside it (under the same parent) with
ccache installed, the scratch build reuses the repository build's objects and each restore is
a cache hit.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "tools" / "report"))
import gate  # noqa: E402
import patches  # noqa: E402
import sites  # noqa: E402
from nsvreport import core, mutation as mutation_report  # noqa: E402  (the renderer of reports/mutation*.md)
# lib/cuda is built only with a CUDA toolchain: its mutants could not be judged on this machine.
DEFAULT_EXCLUDED = ["lib/cuda/"]
SOURCE_FOLDERS = ["lib", "analysis", "checks", "engine", "render", "cli"]  # every folder of C++ sources a mutant may live in


def parse_args() -> argparse.Namespace:
    return parse_args_from(sys.argv[1:])


def parse_args_from(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--sample", type=int, default=150, help="mutants that compile to judge (default 150)")
    p.add_argument("--seed", type=int, default=20261202, help="the sample's seed (default 20261202)")
    p.add_argument("--folders", nargs="+", default=SOURCE_FOLDERS,
                   help="source folders (default " + " ".join(SOURCE_FOLDERS) + ")")
    p.add_argument("--scratch", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "nsv-mutation",
                   help="scratch folder outside the repository (default $TMPDIR/nsv-mutation)")
    p.add_argument("--results", type=Path, default=REPO / "reports/mutation/results.jsonl")
    p.add_argument("--triage", type=Path, default=REPO / "reports/mutation/triage.json")
    p.add_argument("--out", type=Path, default=REPO / "reports/mutation.md")
    p.add_argument("--patches-out", type=Path, default=REPO / "reports/mutation_handwritten.md",
                   help="the report of the hand-written patches (default reports/mutation_handwritten.md)")
    p.add_argument("--time-budget", type=float, default=0,
                   help="start no new mutant after this many seconds (0: no limit); rerun to resume")
    p.add_argument("--first", nargs="+", default=[], metavar="TEST",
                   help="gate tests to run before the others (the order otherwise follows their kills per second)")
    p.add_argument("--match", nargs="+", default=[""], metavar="TEXT",
                   help="with --rerun-survivors: only survivors whose file path contains one of these")
    p.add_argument("--again", action="store_true",
                   help="with --rerun-survivors: judge again also the survivors an earlier rerun killed "
                        "(after code moved: does the current gate still kill them?)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="build jobs and test slots (default: cores)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="print the sample's sites, run nothing")
    mode.add_argument("--rerun-survivors", action="store_true",
                      help="judge again, on the current gate, every survivor not shown equivalent that no rerun has killed yet")
    mode.add_argument("--render-only", action="store_true", help="rewrite the report from the results and triage")
    mode.add_argument("--patches", nargs="*", type=Path, metavar="PATCH",
                      help="judge the hand-written mutants (default: every properties/mutants/*.patch) on the whole "
                           "gate; their rows replace the earlier ones of the same patch")
    args = p.parse_args(argv)
    if args.sample < 1:
        p.error("--sample must be at least 1")
    scratch = args.scratch.resolve()
    if scratch == REPO or REPO in scratch.parents:
        p.error(f"the scratch folder must be outside the repository (got {args.scratch})")
    args.scratch = scratch
    return args


def shuffled_sites(root: Path, folders: list[str], seed: int) -> list[sites.Site]:
    order = sites.all_sites(root, folders, DEFAULT_EXCLUDED)
    random.Random(seed).shuffle(order)
    return order


def commit() -> str:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", *SOURCE_FOLDERS, "properties", "python"],
                           capture_output=True, text=True).stdout.strip()
    return (head.stdout.strip() or "unknown") + ("+changes" if dirty else "")


class Scratch:
    """A copy of the tree with its own build, where one mutant at a time is applied."""

    def __init__(self, folder: Path, jobs: int):
        self.tree = folder / "tree"
        self.build = self.tree / "build"
        self.logs = folder / "logs"
        self.jobs = jobs
        self.logs.mkdir(parents=True, exist_ok=True)

    def sync(self) -> None:
        """Copies the tracked and untracked files whose content or mode differs from the
        scratch tree's (the gate runs scripts of the tree, e.g. README's `tools/mutation/sample.py`).
        A copied file gets a new modification time, so the build recompiles it, also a file an
        interrupted run left mutated; an unchanged file keeps its time and its objects."""
        listing = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                                 check=True, capture_output=True).stdout
        self.source = commit()  # what the scratch tree holds from now on: each verdict is stamped with it
        names = set(filter(None, listing.decode("utf-8").split("\0")))
        for name in names:
            source, target = REPO / name, self.tree / name
            if not source.is_file():
                continue  # deleted in the working tree, still listed by the index
            if target.is_file() and target.read_bytes() == source.read_bytes():
                if target.stat().st_mode != source.stat().st_mode:
                    shutil.copymode(source, target)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            shutil.copymode(source, target)
        # The gate has tests of a checkout (`git ls-files reports`): the scratch tree's index
        # lists what the repository's does.
        if not (self.tree / ".git").exists():
            subprocess.run(["git", "init", "-q", str(self.tree)], check=True)
        # A file moved or deleted in the repository goes from the scratch tree too: a stale copy
        # would still be enumerated as mutation sites and listed by the scratch index.
        indexed = subprocess.run(["git", "-C", str(self.tree), "ls-files", "-z"], check=True, capture_output=True).stdout
        for name in filter(None, indexed.decode("utf-8").split("\0")):
            if name not in names or not (REPO / name).is_file():
                (self.tree / name).unlink(missing_ok=True)
        subprocess.run(["git", "-C", str(self.tree), "add", "-A"], check=True)

    def configure(self) -> None:
        if (self.build / "build.ninja").exists():
            return
        args = ["cmake", "-S", str(self.tree), "-B", str(self.build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                "-DNSV_WITH_CUDA=OFF", "-DNSV_UNITY=OFF"]  # one mutated file recompiles alone, not its batch
        if shutil.which("ccache"):
            args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)

    def compile(self, log: Path) -> tuple[bool, float]:
        start = time.monotonic()
        with open(log, "w") as out:
            code = subprocess.run(["cmake", "--build", str(self.build), "-j", str(self.jobs)], stdout=out,
                                  stderr=subprocess.STDOUT).returncode
        return code == 0, time.monotonic() - start

    def judge(self, mutant: sites.Site | patches.Patch, tests: list[gate.GateTest]) -> dict:
        """Applies the mutant, rebuilds, runs the gate, restores. A sampled site runs the gate to
        its first failure; a hand-written patch runs all of it and lists every test that failed."""
        whole_gate = isinstance(mutant, patches.Patch)
        restore = patches.apply(self.tree, mutant) if whole_gate else apply_site(self.tree, mutant)
        if restore is None:
            return {"verdict": "does_not_apply"}
        try:
            built, build_s = self.compile(self.logs / "build.log")
            if not built:
                return {"verdict": "stillborn", "build_s": round(build_s, 1)}
            outcome = gate.run(self.build, tests, self.jobs, stop_at_first_failure=not whole_gate, log_dir=self.logs)
            verdict = {"verdict": "killed" if outcome.failed else "survived", "killer": outcome.failed,
                       "build_s": round(build_s, 1), "test_s": round(outcome.seconds, 1)}
            if whole_gate:
                verdict["killers"] = gate.failing_cases(outcome, self.logs)
            return verdict
        finally:
            restore()


def apply_site(tree: Path, site: sites.Site):
    """Writes the mutated line into the tree; returns what restores the file."""
    path = tree / site.path
    original = path.read_bytes()
    lines = original.decode("utf-8").split("\n")
    if lines[site.line - 1] != site.before:
        raise RuntimeError(f"{site.path}:{site.line} differs from the enumerated line")
    lines[site.line - 1] = site.after
    path.write_text("\n".join(lines), encoding="utf-8")
    # Written anew (not its old modification time): the next build recompiles the original.
    return lambda: path.write_bytes(original)


def record(site: sites.Site, seed: int, source: str, verdict: dict) -> dict:
    return {"key": site.key, "path": site.path, "line": site.line, "operator": site.operator,
            "before": site.before.strip(), "after": site.after.strip(), "seed": seed, "commit": source, **verdict}


def record_patch(patch: patches.Patch, source: str, verdict: dict) -> dict:
    return {"key": patch.key, "source": "patch", "path": patch.path, "name": patch.name, "operator": "patch",
            "what": patch.what, "commit": source, "date": core.today(), "killer": None, "killers": [],
            **verdict}


def baseline(scratch: Scratch) -> list[gate.GateTest]:
    """The unmutated gate must pass; its durations order the tests."""
    built, build_s = scratch.compile(scratch.logs / "baseline_build.log")
    if not built:
        sys.exit(f"sample.py: the unmutated scratch tree does not build (see {scratch.logs / 'baseline_build.log'})")
    print(f"sample: unmutated build {build_s:.0f} s; running the whole gate once", file=sys.stderr)
    tests = gate.gate_tests(scratch.build)
    outcome = gate.run(scratch.build, tests, scratch.jobs, stop_at_first_failure=False, log_dir=scratch.logs / "baseline")
    if outcome.failed:
        sys.exit(f"sample.py: the unmutated gate fails ({outcome.failed}); fix that first")
    for t in tests:
        t.baseline_s = outcome.durations.get(t.name, 0)
    print(f"sample: the unmutated gate passed in {outcome.seconds:.0f} s", file=sys.stderr)
    return tests


def count_kills(tests: list[gate.GateTest], rows: list[dict]) -> None:
    by_name = {t.name: t for t in tests}
    for r in rows:
        killer = (r.get("killer") or "").split(" (")[0]
        if killer in by_name:
            by_name[killer].kills += 1


def append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as out:
        out.write(json.dumps(row, sort_keys=True) + "\n")


def run_sample(args: argparse.Namespace, scratch: Scratch, tests: list[gate.GateTest]) -> None:
    rows = mutation_report.load_results(args.results)
    done = {r["key"]: r for r in rows if r.get("seed") == args.seed}
    count_kills(tests, rows)
    valid = sum(1 for r in done.values() if r["verdict"] != "stillborn")
    start = time.monotonic()
    for site in shuffled_sites(scratch.tree, args.folders, args.seed):
        if valid >= args.sample:
            break
        if site.key in done:
            continue
        if args.time_budget and time.monotonic() - start > args.time_budget:
            print(f"sample: time budget spent with {valid} of {args.sample} mutants judged; rerun to resume",
                  file=sys.stderr)
            break
        print(f"sample: [{valid + 1}/{args.sample}] {site.path}:{site.line} {site.operator}: "
              f"{site.before.strip()}  ->  {site.after.strip()}", file=sys.stderr)
        row = record(site, args.seed, scratch.source, scratch.judge(site, tests))
        append(args.results, row)
        done[site.key] = row
        if row["verdict"] != "stillborn":
            valid += 1
        if row["verdict"] == "killed":
            count_kills(tests, [row])
        print(f"sample:    {row['verdict']}" + (f" by {row['killer']}" if row.get("killer") else ""), file=sys.stderr)


def run_patches(args: argparse.Namespace, scratch: Scratch, tests: list[gate.GateTest]) -> bool:
    """Judges each hand-written patch; True when every one was killed."""
    rows = mutation_report.load_results(args.results)
    count_kills(tests, rows)
    all_killed = True
    for patch in patches.all_patches(REPO, args.patches):
        print(f"sample: patch {patch.name}: {patch.what}", file=sys.stderr)
        row = record_patch(patch, scratch.source, scratch.judge(patch, tests))
        rows = [r for r in rows if r["key"] != row["key"]] + [row]
        write_results(args.results, rows)
        all_killed &= row["verdict"] == "killed"
        print(f"sample:    {row['verdict']}" + (f" by {len(row['killers'])} test(s)" if row["killers"] else ""), file=sys.stderr)
    return all_killed


def rerun_survivors(args: argparse.Namespace, scratch: Scratch, tests: list[gate.GateTest]) -> None:
    rows = mutation_report.load_results(args.results)
    count_kills(tests, rows)
    triage = mutation_report.load_triage(args.triage)
    # every source folder, not only the sample's: a line may have moved to another folder since
    every = sites.all_sites(scratch.tree, list(dict.fromkeys(args.folders + SOURCE_FOLDERS)), DEFAULT_EXCLUDED)
    current = {s.key: s for s in every}
    # A line moved to another file (code split out) is the same mutant when its change is unique.
    by_change: dict[tuple, list[sites.Site]] = {}
    for s in every:
        by_change.setdefault((s.operator, s.before.strip(), s.after.strip()), []).append(s)
    for r in rows:
        if r["verdict"] != "survived" or r.get("source") == "patch" or not any(m in r["path"] for m in args.match):
            continue
        if triage.get(r["key"], {}).get("status") == "equivalent":
            continue  # shown equivalent: its verdict stands
        if r.get("rerun", {}).get("verdict") == "killed" and not args.again:
            continue  # already killed by a property added since
        site = current.get(r["key"])
        moved = by_change.get((r["operator"], r["before"], r["after"]), [])
        if site is None and len(moved) == 1:
            site = moved[0]
        if site is None:
            site = relocated_site(scratch.tree, r["operator"], triage.get(r["key"], {}).get("relocated_to"))
        if site is None:
            if r.get("rerun", {}).get("verdict") != "killed":  # --again keeps a kill whose line is gone since
                r["rerun"] = {"verdict": "gone", "commit": scratch.source}  # the line no longer exists
            continue
        print(f"sample: rerun {site.path}:{site.line} {site.operator}", file=sys.stderr)
        again = scratch.judge(site, tests)
        r["rerun"] = {**again, "commit": scratch.source}
        if site.path != r["path"]:
            r["rerun"]["moved_to"] = f"{site.path}:{site.line}"
        write_results(args.results, rows)  # after each verdict, so an interrupted rerun keeps what it judged
    write_results(args.results, rows)


def relocated_site(tree: Path, operator: str, relocated: dict | None) -> sites.Site | None:
    """The same bug where its logic lives now, when the line itself is gone (the logic was replaced
    by a library routine written differently): the triage names the new line and its mutated form
    ({"path", "before", "after"}, whole lines without indentation); None when it names none or the
    line is not (uniquely) there."""
    if not relocated:
        return None
    lines = (tree / relocated["path"]).read_text(encoding="utf-8").split("\n")
    found = [i for i, text in enumerate(lines) if text.strip() == relocated["before"]]
    if len(found) != 1:
        return None
    text = lines[found[0]]
    indent = text[:len(text) - len(text.lstrip())]
    return sites.Site(relocated["path"], found[0] + 1, operator, text, indent + relocated["after"])


def reproduce_extra(args: argparse.Namespace) -> str:
    """The files of this run that are not the defaults, for the report's reproduce line (relative
    to the repository: no machine path in a generated file)."""
    defaults = parse_args_from([])
    extra = ""
    for name in ("results", "triage", "out"):
        value = getattr(args, name).resolve()
        if value != getattr(defaults, name).resolve():
            extra += f" --{name} " + (str(value.relative_to(REPO)) if REPO in value.parents else value.name)
    return extra


def write_results(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    tmp.replace(path)


def main() -> None:
    args = parse_args()
    if args.list:
        for s in shuffled_sites(REPO, args.folders, args.seed)[:args.sample]:
            print(f"{s.path}:{s.line} {s.operator}: {s.before.strip()}  ->  {s.after.strip()}")
        return
    if not args.render_only:
        scratch = Scratch(args.scratch, args.jobs)
        scratch.sync()
        scratch.configure()
        tests = baseline(scratch)
        for t in tests:  # --first: before every other test in gate.py's kills-per-second order
            t.kills += 10**6 if t.name in args.first else 0
        if args.rerun_survivors:
            rerun_survivors(args, scratch, tests)
        elif args.patches is not None:
            all_killed = run_patches(args, scratch, tests)
        else:
            run_sample(args, scratch, tests)
    results = args.results.resolve()
    for path in mutation_report.write(mutation_report.load_results(args.results), args.triage, args.out, args.patches_out,
                                      seed=args.seed, target=args.sample, folders=args.folders,
                                      reproduce_extra=reproduce_extra(args),
                                      results=str(results.relative_to(REPO)) if REPO in results.parents else results.name):
        path = Path(path)
        print(f"sample: wrote {path.relative_to(REPO) if REPO in path.parents else path}", file=sys.stderr)
    if args.patches is not None and not args.render_only and not all_killed:
        sys.exit("sample.py: a hand-written mutant was not killed (see reports/mutation_handwritten.md)")


if __name__ == "__main__":
    main()
