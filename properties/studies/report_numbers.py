#!/usr/bin/env python3
"""Every number in report.json has an entry in report_numbers.json that says what checks it.

Claims: each numeric leaf of report.json (its path with array indices as []) matches exactly one
entry's prefix, the longest; every entry is one of: checked (cases and statistics named, gap null),
checked in part (a gap said), given (a parameter echoed) or measured (a timing); every property an
entry names exists under properties/ (each '/'-separated part a Boost suite or test case declared
in a file that declares the first part, a file a CMakeLists.txt under properties/ builds); no entry
matches nothing. It prints how many numbers
each kind covers, so the gaps stay counted.

Negative control (--negative-control): with any one entry taken out that no shorter prefix holds,
or any property name misspelt, the check fails.

Usage: report_numbers.py [--negative-control] REPORT_JSON [MAP_JSON]
"""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent  # properties/studies
PROPERTIES = HERE.parent
ADD_TEST = re.compile(r"add_test\(NAME (\w+)")
CTEST = "CTest tests"
DECLARED = re.compile(r"(?:BOOST_AUTO_TEST_SUITE|BOOST_AUTO_TEST_CASE|NSV_PROPERTY)\((\w+)")


def numeric_paths(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numeric_paths(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for item in value:
            yield from numeric_paths(item, path + "[]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path


def matches(prefix, path):
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[]")


def built_sources():
    """The .cpp files a CMakeLists.txt under properties/ builds (a file no target lists tests nothing)."""
    built = set()
    for cmake in PROPERTIES.rglob("CMakeLists.txt"):
        for name in re.findall(r"([\w/]+\.cpp)\b", cmake.read_text()):
            built.add((cmake.parent / name).resolve())
    return built


def declarations():
    built = built_sources()
    names = {source: set(DECLARED.findall(source.read_text())) for source in PROPERTIES.rglob("*.cpp") if source.resolve() in built}
    # A check that is a script, not a property: its CTest test, named "ctest:NAME".
    names[CTEST] = {f"ctest:{n}" for cmake in PROPERTIES.rglob("CMakeLists.txt") for n in ADD_TEST.findall(cmake.read_text())}
    return names


def property_exists(name, names_by_file):
    if name.startswith("ctest:"):
        return name in names_by_file[CTEST]
    first, *rest = name.split("/")
    return any(first in names and all(part in names for part in rest) for names in names_by_file.values())


def kind(entry):
    for k in ("given", "measured"):
        if k in entry:
            return k
    return "checked" if entry.get("gap") is None else "checked in part"


def problems_of(report, table, names_by_file, counts):
    problems = []
    for entry in table:
        keys = set(entry) - {"prefix"}
        if not (keys <= {"given"} or keys <= {"measured"} or keys <= {"cases", "statistics", "gap"}) or not keys:
            problems.append(f"entry {entry['prefix']}: one of given, measured or cases/statistics/gap, got {sorted(keys)}")
        if "gap" in entry and entry["gap"] is None and not entry.get("statistics"):
            problems.append(f"entry {entry['prefix']}: checked (gap null) but names no property of its statistics")
        for name in entry.get("cases", []) + entry.get("statistics", []):
            if not property_exists(name, names_by_file):
                problems.append(f"entry {entry['prefix']}: no property '{name}' under properties/")
    used = set()
    for path in numeric_paths(report):
        hits = [e for e in table if matches(e["prefix"], path)]
        if not hits:
            problems.append(f"report.json's {path}: no entry says what checks it (add one to report_numbers.json)")
            continue
        entry = max(hits, key=lambda e: len(e["prefix"]))
        used.add(entry["prefix"])
        counts[kind(entry)] = counts.get(kind(entry), 0) + 1
    for entry in table:
        if entry["prefix"] not in used:
            problems.append(f"entry {entry['prefix']}: matches no number of report.json")
    return problems


def negative_control(report, table, names_by_file):
    """Each entry taken out (one no shorter prefix holds), and each property name misspelt, must be seen."""
    unseen = []
    for i, entry in enumerate(table):
        held = any(o is not entry and matches(o["prefix"], entry["prefix"]) for o in table)
        if not held and problems_of(report, table[:i] + table[i + 1:], names_by_file, {}) == []:
            unseen.append(f"entry {entry['prefix']} taken out")
        for field in ("cases", "statistics"):
            for j, name in enumerate(entry.get(field, [])):
                changed = dict(entry, **{field: entry[field][:j] + [name + "_x"] + entry[field][j + 1:]})
                if problems_of(report, table[:i] + [changed] + table[i + 1:], names_by_file, {}) == []:
                    unseen.append(f"{name} misspelt")
    for u in unseen:
        print("FAIL: not seen:", u)
    print("negative control: every top entry taken out and every property name misspelt, each seen" if not unseen else "")
    return 1 if unseen else 0


def main(argv):
    control = "--negative-control" in argv
    argv = [a for a in argv if a != "--negative-control"]
    report = json.loads(Path(argv[1]).read_text())
    table = json.loads(Path(argv[2] if len(argv) > 2 else HERE / "report_numbers.json").read_text())["sections"]
    names_by_file = declarations()
    if control:
        return negative_control(report, table, names_by_file)
    counts = {}
    problems = problems_of(report, table, names_by_file, counts)
    total = sum(counts.values())
    for k in ("checked", "checked in part", "given", "measured"):
        print(f"{k}: {counts.get(k, 0)} of {total} numbers")
    for entry in table:
        if entry.get("gap"):
            print(f"  gap, {entry['prefix']}: {entry['gap']}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
