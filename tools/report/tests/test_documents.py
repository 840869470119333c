"""The one renderer (tools/report/nsvreport): every committed document is what it renders from the
committed data, byte for byte; the performance report from a small results fixture; the shims
under the old script paths still work."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
REPORTS = REPO / "reports"
sys.path.insert(0, str(REPO / "tools" / "report"))
from nsvreport import core, mpi, mutation, optimizer_checks, performance, python_checks, readme, torch_checks  # noqa: E402


def committed(name):
    return (REPORTS / name).read_text()


def test_readme_renders_as_committed():
    report = json.loads((REPORTS / "report.json").read_text())
    ref = json.loads((REPO / "fixtures" / "seed_reference.json").read_text())
    assert readme.render(str(REPORTS), report, ref) == committed("README.md")


def test_mpi_readme_renders_as_committed():
    data = json.loads((REPORTS / "mpi" / "allreduce_orders.json").read_text())
    assert mpi.render(data["rows"], data["mpi"]) == committed("mpi/README.md")


def test_python_report_renders_as_committed():
    assert python_checks.render(str(REPORTS / "python")) == committed("python/README.md")


#: The reports written by the Python layer's checks: (renderer, folder, its data file).
CHECK_REPORTS = [(torch_checks, "torch", "results.json"), (optimizer_checks, "optimizers", "optimizers.json")]


@pytest.mark.parametrize("renderer, folder, data", CHECK_REPORTS, ids=[r[1] for r in CHECK_REPORTS])
def test_check_report_renders_as_committed(renderer, folder, data):
    if not (REPORTS / folder / data).exists():
        pytest.skip(f"reports/{folder} not generated")
    assert renderer.render(str(REPORTS / folder)) == committed(f"{folder}/README.md")


@pytest.mark.parametrize("renderer, folder, data", CHECK_REPORTS, ids=[r[1] for r in CHECK_REPORTS])
def test_check_report_names_no_machine_path(renderer, folder, data):
    if not (REPORTS / folder / data).exists():
        pytest.skip(f"reports/{folder} not generated")
    for name in ("README.md", data):
        text = committed(f"{folder}/{name}")
        assert str(REPO) not in text and "/home/" not in text and "/tmp/" not in text, name


def test_mutation_reports_render_as_committed(monkeypatch):
    text = committed("mutation.md")
    date = re.search(r"Rendered (\d{4}-\d{2}-\d{2})\.", text).group(1)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(__import__("datetime").datetime.fromisoformat(date + "T12:00:00+00:00").timestamp())))
    rows = mutation.load_results(str(REPORTS / "mutation" / "results.jsonl"))
    assert mutation.render_sample(rows, mutation.load_triage(str(REPORTS / "mutation" / "triage.json"))) == text
    assert mutation.render_patches(rows) == committed("mutation_handwritten.md")


def test_performance_report_renders_from_its_results(monkeypatch):
    monkeypatch.chdir(HERE / "fixtures")
    assert performance.render("bench-results") == (HERE / "fixtures" / "performance.md").read_text()


def test_performance_report_says_what_was_not_measured(tmp_path, monkeypatch):
    (tmp_path / "machine.json").write_text('{"model": "m", "cores": "1", "family": "f", "cpu_model": "c"}')
    monkeypatch.chdir(tmp_path)
    text = performance.render(".")
    assert "PyTorch not available to /usr/bin/python3: **not measured** (skipped)." in text
    assert text.count("\nnot measured\n") == 3  # (e), (f) and (g)


def test_performance_report_carries_the_side_by_side_benchmarks_when_run(tmp_path, monkeypatch):
    (tmp_path / "machine.json").write_text('{"model": "m", "cores": "1", "family": "f", "cpu_model": "c"}')
    monkeypatch.chdir(tmp_path)
    assert "## nsv audit at large meshes" not in performance.render(".")
    assert "regression benchmark" not in performance.render(".")
    (tmp_path / "regression.md").write_text("| kernel | planted regression row |\n")
    (tmp_path / "audit_scaling.md").write_text("| case | planted audit row |\n")
    text = performance.render(".")
    assert "## The reference beside earlier builds (regression benchmark)" in text and "| kernel | planted regression row |" in text
    assert "## nsv audit at large meshes and models" in text and "| case | planted audit row |" in text


def test_performance_report_judges_the_checker_overhead_per_shape(tmp_path, monkeypatch):
    (tmp_path / "machine.json").write_text('{"model": "m", "cores": "1", "family": "f", "cpu_model": "c"}')
    row = dict(code="K1", status="holds", cases=3, calls_per_case=2.0, total_s=0.3, callable_s=0.1)
    rows = [dict(row, shape="64x128", property="a", nsverify_s=0.5, ratio=5.0),
            dict(row, shape="512x1024", property="a", nsverify_s=0.05, ratio=0.5),
            dict(row, shape="512x1024", property="b", nsverify_s=0.2, ratio=2.0),
            dict(row, shape="512x1024", property="ref", code="REF", nsverify_s=0.6, ratio=6.0)]
    (tmp_path / "overhead.json").write_text(json.dumps(rows))
    (tmp_path / "ref_floor.json").write_text(json.dumps([dict(shape="512x1024", callable_ms=100.0, fp32_ms=110.0,
                                                              fp64_standard_ms=200.0, fp64_gram_ms=220.0,
                                                              any_s_floor=3.1, ref_s_floor=5.0)]))
    (tmp_path / "overhead_before.json").write_text(json.dumps([dict(rows[1], nsverify_s=1.0, ratio=10.0)]))
    (tmp_path / "overhead_before.txt").write_text("build X")
    monkeypatch.chdir(tmp_path)
    text = performance.render(".")
    # REF is exempt from (g): judged against its floor, not counted among the properties
    assert "| (g) checker's own time ≤ the callable's, every property but REF, 512x1024 | 1 of 2 properties (worst 2.00x) | **MISSED** |" in text
    assert ("| (g) REF (exempt: judged against its floor, three fp32 runs and the cheaper float64 run), 512x1024 | "
            "6.00x the callable against a floor of 5.00x: 1.20x its floor | n/a |") in text
    assert "64x128 |" not in [line for line in text.splitlines() if line.startswith("| (g)")]
    assert "| 512x1024 | K1 | a | 2.0 | 300.0 | 100.0 | 50.0 | 0.50x | 1000.0 | 10.00x |" in text
    assert "| 512x1024 | K1 | b | 2.0 | 300.0 | 100.0 | 200.0 | 2.00x | - | - |" in text and "*before*: build X" in text


def test_performance_report_judges_the_check_at_a_layers_shape(tmp_path, monkeypatch):
    (tmp_path / "machine.json").write_text('{"model": "m", "cores": "1", "family": "f", "cpu_model": "c"}')
    row = dict(code="K1", status="holds", cases=1, calls_per_case=2.0, shape="4096x14336")
    rows = [dict(row, property="a", total_s=500.0, callable_s=300.0, nsverify_s=200.0, ratio=0.67),
            dict(row, property="b", total_s=460.0, callable_s=250.0, nsverify_s=210.0, ratio=0.84)]
    (tmp_path / "overhead_layer.json").write_text(json.dumps(rows))
    monkeypatch.chdir(tmp_path)
    text = performance.render(".")
    assert ("| (g) the check at 4096x14336, one case per property, within 15 min, nsverify's share ≤ the callable's | "
            "16.0 min (nsverify 410 s, callable 550 s) | **MISSED** |") in text
    assert "| (g) checker's own time ≤ the callable's, every property but REF, 4096x14336 | 2 of 2 properties (worst 0.84x) | **MET** |" in text


def test_performance_report_shows_the_optimizer_check_where_measured(tmp_path, monkeypatch):
    (tmp_path / "machine.json").write_text('{"model": "m", "cores": "1", "family": "f", "cpu_model": "c"}')
    monkeypatch.chdir(tmp_path)
    assert "check_optimizer" not in performance.render(".")  # the optional stage `optimizer` not run: no section
    row = dict(case="tiny", verdict="PASS", runs=3, wall_s=2.5, optimizer_s=0.5, optimizer_step_s=0.25, nsverify_s=2.0,
               nsverify_share=0.8, pool_start_s=1.0, in_runs_other_s=0.5, between_runs_s=0.5, repeat=5, first_wall_s=4.0)
    (tmp_path / "optimizer_check.json").write_text(json.dumps([row, dict(row, case="layer", repeat=1)]))
    text = performance.render(".")
    assert "| tiny (median of 5) | PASS | 3 | 2.50 | 4.00 | 0.50 (0.25) | 2.00 | 80% | 1.00 | 0.50 | 0.50 |" in text
    assert "| layer | PASS | 3 | 2.50 | 4.00 |" in text


def test_number_filters_write_unmeasured_figures_as_na():
    assert core.fixed(None) == core.general(None, 3) == core.times(None) == "n/a"
    assert core.fixed(1.25, 1) == "%.1f" % 1.25 and core.general(0.000123456, 3) == "%.3g" % 0.000123456
    assert core.pct(0.1234) == "12.3%" and core.rel(0.0) == "0 (exact)" and core.size(2048) == "2.0 KiB"
    assert core.row(["a", 1, "b|c"]) == "| a | 1 | b\\|c |" and core.cell("b|c") == "b\\|c"


def table_cells(line):
    """The cells of a GitHub Markdown table line: split at each | that is not escaped (in GFM an
    escaped one stays in its cell, code span or not), outer pipes dropped."""
    return len(re.split(r"(?<!\\)\|", line.strip().strip("|").replace("\\\\", "")))


def test_every_committed_table_has_as_many_cells_in_each_row_as_in_its_rule():
    """A header or row whose cell count differs from the |---| rule below the header renders as
    text (header) or loses cells (row) on GitHub: the Python report's status table did (issue 29)."""
    bad = []
    for path in sorted(REPORTS.rglob("*.md")):
        lines = path.read_text().split("\n")
        for i, line in enumerate(lines[1:], 1):
            if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
                width = table_cells(line)
                j = i - 1
                while j < len(lines) and lines[j].startswith("|"):
                    if j != i and table_cells(lines[j]) != width:
                        bad.append(f"{path.relative_to(REPO)}:{j + 1}: {table_cells(lines[j])} cells, rule {width}")
                    j += 1
    assert not bad, "\n".join(bad)


def test_shims_keep_the_old_script_paths(tmp_path):
    """tools/report/render_report.py (nsv report's --render-script, README) renders README.md."""
    shutil.copy(REPORTS / "report.json", tmp_path / "report.json")
    (tmp_path / "figures").mkdir()
    for png in (REPORTS / "figures").glob("*.png"):
        (tmp_path / "figures" / png.name).write_bytes(b"")
    out = subprocess.run([sys.executable, str(REPO / "tools" / "report" / "render_report.py"), str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "README.md").read_text() == committed("README.md")
    out = subprocess.run([sys.executable, str(REPO / "tools" / "report"), "compare", str(REPORTS), str(REPORTS)],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "0 difference(s)" in out.stdout, out.stdout + out.stderr


def compare(old, new):
    return subprocess.run([sys.executable, str(REPO / "tools" / "report"), "compare", str(old), str(new)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("folder, results", [("python", "results.json"), ("torch", "results.json"),
                                             ("optimizers", "optimizers.json")])
def test_compare_check_reports_names_a_changed_verdict_and_ignores_timings(folder, results, tmp_path):
    doc = json.loads((REPORTS / folder / results).read_text())
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / results).write_text(json.dumps(doc))
    same = compare(REPORTS / folder, tmp_path / "old")
    assert same.returncode == 0 and "every verdict and status equal" in same.stdout, same.stdout + same.stderr

    def first_result(node):  # the first check result of the document: a dict with a verdict
        if isinstance(node, dict):
            return node if "verdict" in node else next(filter(None, map(first_result, node.values())), None)
        return next(filter(None, map(first_result, node)), None) if isinstance(node, list) else None
    doc["seconds"] = 1e6  # a timing: no difference
    (tmp_path / "timed").mkdir()
    (tmp_path / "timed" / results).write_text(json.dumps(doc))
    timed = compare(REPORTS / folder, tmp_path / "timed")
    assert timed.returncode == 0, timed.stdout
    result = first_result(doc)
    result["verdict"] = "FAIL" if result["verdict"] != "FAIL" else "PASS"
    (tmp_path / "changed").mkdir()
    (tmp_path / "changed" / results).write_text(json.dumps(doc))
    changed = compare(REPORTS / folder, tmp_path / "changed")
    assert changed.returncode == 1 and "1 verdict(s) or status(es) differ" in changed.stdout, changed.stdout
    assert ".verdict: " in changed.stdout and "(a verdict or status)" in changed.stdout, changed.stdout


def test_compare_refuses_a_missing_folder_and_names_a_missing_file(tmp_path):
    missing = compare(REPORTS, tmp_path / "nowhere")
    assert missing.returncode == 2 and "no such folder" in missing.stderr, missing.stdout + missing.stderr
    empty = compare(REPORTS, tmp_path)
    assert empty.returncode == 1 and "sweep.csv: only in OLD" in empty.stdout and "report.json: only in OLD" in empty.stdout, \
        empty.stdout


@pytest.mark.parametrize("command", ["readme", "figures", "performance", "mpi", "python", "optimizers", "mutation",
                                     "compare"])
def test_every_command_has_help(command):
    out = subprocess.run([sys.executable, str(REPO / "tools" / "report"), command, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "usage: tools/report " + command in out.stdout, out.stdout + out.stderr


def test_figures_of_a_checkout_keep_the_index_of_the_figures_whose_data_is_not_committed(tmp_path):
    """Without gram_stability.csv and audit/*.json (not committed) two figures cannot be drawn again;
    their committed files stay, and so do their entries in figures/index.json."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "reports"
    for name in subprocess.run(["git", "-C", str(REPO), "ls-files", "reports"], capture_output=True, text=True,
                               check=True).stdout.split():
        (out.parent / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, out.parent / name)
    assert not (out / "gram_stability.csv").exists()
    run = subprocess.run([sys.executable, str(REPO / "tools" / "plot_report.py"), str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (out / "figures" / "index.json").read_text() == committed("figures/index.json")
