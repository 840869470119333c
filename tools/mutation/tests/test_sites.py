"""The mutation sampler's site enumeration: each operator produces the mutant it names, never
inside a comment or a literal, and a seed always draws the same sample."""
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sites  # noqa: E402


def mutants_of(tmp_path, source: str) -> set[tuple[str, str]]:
    (tmp_path / "a.cpp").write_text(source)
    return {(s.operator, s.after.strip()) for s in sites.sites_of_file(tmp_path, "a.cpp")}


def test_each_operator_gives_its_mutant(tmp_path):
    found = mutants_of(tmp_path, "void f() {\n  if (a < b && c) x = y + z;\n  g(p, q);\n  k = std::min(u, v);\n  flag = true;\n}\n")
    assert ("ROR", "if (a <= b && c) x = y + z;") in found
    assert ("LCR", "if (a < b || c) x = y + z;") in found
    assert ("AOR", "if (a < b && c) x = y - z;") in found
    assert ("NEG", "if (!(a < b && c)) x = y + z;") in found
    assert ("ASW", "g(q, p);") in found
    assert ("SDL", ";") in found
    assert ("MMX", "k = std::max(u, v);") in found
    assert ("BOL", "flag = false;") in found


def test_constants_move_by_one_and_never_below_zero(tmp_path):
    found = mutants_of(tmp_path, "int n = 0;\nint m = 7;\n")
    assert ("CRP", "int n = 1;") in found
    assert ("CRP", "int m = 8;") in found and ("CRP", "int m = 6;") in found
    assert not any(after == "int n = -1;" for _, after in found)


def test_comments_strings_and_raw_strings_are_not_mutated(tmp_path):
    found = mutants_of(tmp_path, 'auto s = "a < b + 1"; // c < d\n/* e < f\n g + h */\nauto r = R"(x < y\nz + 1)";\n')
    assert found == set(), found


def test_declarations_templates_and_continuations_are_not_deleted(tmp_path):
    found = mutants_of(tmp_path, "int x = f();\nstd::vector<int> v(3);\nreturn g();\ny = h(a,\n      b);\n")
    assert not any(op == "SDL" for op, _ in found), found


def test_a_seed_draws_the_same_sample(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.cpp").write_text("int f(int a, int b) { return a < b ? a + 1 : b - 2; }\n")
    order = [s.key for s in sites.all_sites(tmp_path, ["lib"], [])]
    first, second = order[:], order[:]
    random.Random(7).shuffle(first)
    random.Random(7).shuffle(second)
    assert first == second and len(order) >= 5


def python_mutants_of(tmp_path, source: str) -> set[tuple[str, str]]:
    (tmp_path / "a.py").write_text(source)
    return {(s.operator, s.after.strip()) for s in sites.sites_of_file(tmp_path, "a.py")}


def test_each_python_operator_gives_its_mutant(tmp_path):
    found = python_mutants_of(tmp_path, "def f(a, b, c, p, q):\n    if a < b and c:\n        x = a + b\n"
                                        "    g(p, q)\n    k = min(p, q)\n    flag = True\n    return not flag, 3\n")
    assert ("ROR", "if a <= b and c:") in found
    assert ("LCR", "if a < b or c:") in found
    assert ("NEG", "if not (a < b and c):") in found
    assert ("AOR", "x = a - b") in found
    assert ("SDL", "pass") in found
    assert ("MMX", "k = max(p, q)") in found
    assert ("BOL", "flag = False") in found
    assert ("NEG", "return flag, 3") in found
    assert ("CRP", "return not flag, 4") in found and ("CRP", "return not flag, 2") in found


def test_python_strings_comments_and_docstrings_are_not_mutated(tmp_path):
    found = python_mutants_of(tmp_path, '"""a < b\nc + 1"""\ns = "x < y + 1"  # a < b\n')
    assert found == {("SDL", "pass")}, found  # the assignment may go; nothing inside its string or comment changes


def test_python_mutants_that_would_not_parse_are_not_sites(tmp_path):
    # `for x in y` -> `for x not in y` and a unary minus made binary do not parse: never sampled
    found = python_mutants_of(tmp_path, "for x in y:\n    z = -1\n")
    assert not any("not in" in after for _, after in found), found
    assert ("CRP", "z = -2") in found and ("CRP", "z = -0") in found


def test_the_package_has_python_sites_and_the_cpp_enumeration_is_unchanged():
    root = Path(__file__).resolve().parents[3]
    python = sites.all_sites(root, ["python/nsverify"], [])
    assert len(python) > 500 and {s.operator for s in python} >= {"ROR", "AOR", "LCR", "NEG", "CRP", "SDL", "BOL"}
    assert all(s.path.endswith(".py") for s in python)
    assert not any(s.path.endswith(".py") for s in sites.all_sites(root, ["lib", "cli"], ["lib/cuda/"]))
