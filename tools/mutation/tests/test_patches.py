"""The hand-written mutants as a source of the sampler: every properties/mutants/*.patch loads
with the bug it plants, applies to the tree and reverts to the same bytes; its verdict row is
rendered in reports/mutation_handwritten.md and never counted in the sample's score."""
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gate  # noqa: E402
import patches  # noqa: E402
import sample  # noqa: E402
from nsvreport import mutation  # noqa: E402  (sample.py puts tools/report on the path)

REPO = Path(__file__).resolve().parents[3]


def copy_of(files, tmp_path):
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, tmp_path / name)
    return {name: (tmp_path / name).read_bytes() for name in files}


def test_every_patch_says_what_bug_it_plants():
    found = patches.all_patches(REPO)
    assert [p.path for p in found] == sorted(str(p.relative_to(REPO)) for p in (REPO / "properties/mutants").glob("*.patch"))
    assert len(found) >= 12
    for p in found:
        assert p.what and p.files(), p.path
        assert all((REPO / f).is_file() for f in p.files()), p.path


def test_each_patch_applies_and_reverts_to_the_same_bytes(tmp_path):
    for p in patches.all_patches(REPO):
        tree = tmp_path / p.name
        original = copy_of(p.files(), tree)
        revert = patches.apply(tree, p)
        assert revert is not None, f"{p.path} does not apply to the tree"
        assert any((tree / f).read_bytes() != original[f] for f in p.files()), p.path
        revert()
        assert {f: (tree / f).read_bytes() for f in p.files()} == original, p.path


def test_a_patch_that_does_not_apply_leaves_the_tree_alone(tmp_path):
    p = patches.all_patches(REPO)[0]
    original = copy_of(p.files(), tmp_path)
    revert = patches.apply(tmp_path, p)
    assert revert is not None
    assert patches.apply(tmp_path, p) is None  # already applied: --forward refuses, nothing changes
    revert()
    assert {f: (tmp_path / f).read_bytes() for f in p.files()} == original


def test_a_patch_row_is_rendered_and_not_counted_in_the_sample():
    p = patches.all_patches(REPO)[0]
    verdicts = [{"verdict": "killed", "killer": "kernel_properties", "killers": ["suite/case", "ctest:kernel_properties"],
                 "build_s": 1.0, "test_s": 2.0}, {"verdict": "survived", "killer": None, "killers": []},
                {"verdict": "does_not_apply"}]
    for verdict, shown in zip(verdicts, ["| killed | suite/case<br>ctest:kernel_properties |", "| **SURVIVED** |  |",
                                          "| **patch does not apply** |  |"]):
        row = sample.record_patch(p, "abc1234", verdict)
        assert row["key"] == p.path and row["source"] == "patch" and "seed" not in row
        text = mutation.render_patches([row])
        assert f"| {p.name} | {p.what} {shown}" in text, text
        assert "Judged at commit abc1234" in text
    site_row = {"key": "lib/a.cpp|ROR|a|b", "path": "lib/a.cpp", "line": 1, "operator": "ROR", "before": "a", "after": "b",
                "seed": 7, "commit": "abc1234", "verdict": "killed", "killer": "t", "build_s": 1, "test_s": 1}
    text = mutation.render_sample([site_row, row], {}, seed=7, target=1, folders=["lib"])
    assert "| judged (compiled) | 1 of the 1 asked for |" in text


def test_failing_cases_lists_the_boost_cases_then_the_tests(tmp_path):
    (tmp_path / "kernel_properties.log").write_text('x.cpp(3): error: in "suite/b_case": check failed\n'
                                                    'x.cpp(9): error: in "suite/a_case": check failed\n')
    outcome = gate.Outcome("kernel_properties", 1.0, {}, ["kernel_properties", "cli_errors (timeout after 130 s)"])
    assert gate.failing_cases(outcome, tmp_path) == ["suite/a_case", "suite/b_case", "ctest:cli_errors",
                                                     "ctest:kernel_properties"]
