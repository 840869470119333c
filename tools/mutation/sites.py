"""Mechanical mutation sites of C++ source: every place one of the classic mutation operators
applies, found line by line in the code with comments and literals blanked out. Python files
(python/nsverify) have their own enumeration on Python's tokens: python_sites.py.

A site is one change of one line (the mutant): the operator, the file, the line number, the
line before and after. Sites are enumerated in a fixed order (files sorted, lines, columns), so a
seed picks the same sample from the same sources on every machine.

Operators (the standard set of mutation testing, cf. Offutt et al., "An experimental
determination of sufficient mutant operators", 1996):
  ROR  relational operator replaced (< <=, > >=, == !=)
  AOR  arithmetic operator replaced (+ -, * /, compound assignments alike)
  LCR  logical connector replaced (&& ||)
  NEG  a condition negated (if (c) -> if (!(c))), or a ! dropped: the branches swapped
  CRP  integer constant off by one (n -> n+1, n -> n-1)
  MMX  std::min and std::max swapped
  BOL  true and false swapped
  SDL  a single-line statement (a call or an assignment) deleted
  ASW  the two arguments of a two-argument call swapped

Operators are matched only where binary operators are written with spaces on both sides (the
style of this code base), so template brackets, stream operators and unary signs are not taken
for comparisons or arithmetic.
"""
from __future__ import annotations

import re
from pathlib import Path

import python_sites  # Python files: their own operators on Python's tokens
from mutation_site import Site


def code_mask(lines: list[str]) -> list[str]:
    """Each line with comments, string and character literals replaced by spaces (same length),
    so the operators below never match inside them. Tracks block comments and raw strings across
    lines."""
    masked = []
    in_block = False
    raw_end = None  # the closing delimiter of an open raw string, e.g. ')"' or ')x"'
    for text in lines:
        out = list(text)
        i = 0
        n = len(text)

        def blank(a: int, b: int) -> None:
            for k in range(a, min(b, n)):
                out[k] = " "

        while i < n:
            if raw_end is not None:
                end = text.find(raw_end, i)
                if end < 0:
                    blank(i, n)
                    i = n
                else:
                    blank(i, end + len(raw_end))
                    i = end + len(raw_end)
                    raw_end = None
                continue
            if in_block:
                end = text.find("*/", i)
                if end < 0:
                    blank(i, n)
                    i = n
                else:
                    blank(i, end + 2)
                    i = end + 2
                    in_block = False
                continue
            c = text[i]
            if text.startswith("//", i):
                blank(i, n)
                break
            if text.startswith("/*", i):
                in_block = True
                continue
            raw = re.match(r'(?:u8|u|U|L)?R"([^(\s]*)\(', text[i:])
            if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                raw_end = ")" + raw.group(1) + '"'
                blank(i, i + raw.end())
                i += raw.end()
                continue
            if c in "\"'":
                # A digit separator (1'000) is not a character literal.
                if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                    i += 1
                    continue
                j = i + 1
                while j < n and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                blank(i, j + 1)
                i = j + 1
                continue
            i += 1
        masked.append("".join(out))
    return masked


_SKIP_LINE = re.compile(r"^\s*(#|static_assert\b|template\b|using\b|namespace\b|extern\b)")

_ROR = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
_AOR = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
        "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*="}
_LCR = {"&&": "||", "||": "&&"}

_SPACED_OP = re.compile(r"(?<=\s)(<=|>=|==|!=|\+=|-=|\*=|/=|&&|\|\||<|>|\+|-|\*|/|%)(?=\s)")
_INTEGER = re.compile(r"(?<![\w.'])(\d+)(?![\w.'])")
_IF = re.compile(r"\bif \(")
_NOT = re.compile(r"(?<=[\s(])!(?=[\w(])")
_MINMAX = re.compile(r"\bstd::(min|max)\b(?=\()")
_BOOL = re.compile(r"\b(true|false)\b")
_CALL2 = re.compile(r"\b(\w+)\((\s*)([\w.]+), ([\w.]+)(\s*)\)")
# A statement that is a call or an assignment: an expression chain, then '(' or an assignment.
_STATEMENT = re.compile(r"^\s*[A-Za-z_]\w*(?:(?:\.|->|::)[A-Za-z_]\w*)*(?:\[[^\]]*\])?\s*(?:\(|(?:=|\+=|-=|\*=|/=)\s|\+\+|--)")
_NOT_A_STATEMENT = re.compile(r"^\s*(return|auto|const|constexpr|static|throw|break|continue|case|default|"
                              r"goto|friend|explicit|virtual|inline|struct|class|enum|typedef|if|for|while|"
                              r"switch|do|else|try|catch|co_return|co_yield|delete|new)\b")
_COMMUTATIVE = {"min", "max", "swap", "hypot", "gcd", "lcm", "equal"}


def _balanced_close(code: str, open_index: int) -> int | None:
    depth = 0
    for k in range(open_index, len(code)):
        if code[k] == "(":
            depth += 1
        elif code[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return None


def _beside_string_literal(text: str, start: int, end: int) -> bool:
    return text[:start].rstrip().endswith('"') or text[end:].lstrip().startswith('"')


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _line_sites(text: str, code: str) -> list[tuple[str, str]]:
    """(operator, mutated line) for every mutation of one line."""
    found: list[tuple[str, str]] = []
    for m in _SPACED_OP.finditer(code):
        op = m.group(1)
        if op in _AOR and _beside_string_literal(text, m.start(), m.end()):
            continue  # string concatenation: a swapped operator would not compile
        for table, name in ((_ROR, "ROR"), (_AOR, "AOR"), (_LCR, "LCR")):
            if op in table:
                found.append((name, _splice(text, m.start(), m.end(), table[op])))
    for m in _INTEGER.finditer(code):
        value = int(m.group(1))
        for new in (value + 1, value - 1):
            if new >= 0:
                found.append(("CRP", _splice(text, m.start(), m.end(), str(new))))
    for m in _IF.finditer(code):
        if code[max(0, m.start() - 1):m.start()].strip() == "" and "constexpr" not in code[m.end():m.end() + 10]:
            close = _balanced_close(code, m.end() - 1)
            if close is not None and ";" not in code[m.end():close]:  # not an if with an initializer
                condition = text[m.end():close]
                found.append(("NEG", _splice(text, m.end(), close, f"!({condition})")))
    for m in _NOT.finditer(code):
        found.append(("NEG", _splice(text, m.start(), m.end(), "")))
    for m in _MINMAX.finditer(code):
        found.append(("MMX", _splice(text, m.start(1), m.end(1), "max" if m.group(1) == "min" else "min")))
    for m in _BOOL.finditer(code):
        found.append(("BOL", _splice(text, m.start(), m.end(), "false" if m.group(1) == "true" else "true")))
    for m in _CALL2.finditer(code):
        name, a, b = m.group(1), m.group(3), m.group(4)
        if a != b and name not in _COMMUTATIVE and not name[0].isupper() and name not in ("if", "for", "while", "switch"):
            found.append(("ASW", _splice(text, m.start(3), m.end(4), f"{text[m.start(4):m.end(4)]}, {text[m.start(3):m.end(3)]}")))
    return found


def _statement_deletion(text: str, code: str, previous_code: str) -> str | None:
    """The line emptied to ';' when it holds one whole call or assignment statement."""
    stripped = code.strip()
    if not stripped.endswith(";") or stripped.count("(") != stripped.count(")"):
        return None
    if _NOT_A_STATEMENT.match(code) or not _STATEMENT.match(code):
        return None
    # The statement must begin on this line: the previous code line ends one.
    if previous_code.strip() and previous_code.strip()[-1] not in ";{}:)":
        return None
    if previous_code.strip().endswith(")") and not re.search(r"\b(if|for|while)\b", previous_code):
        return None
    indent = text[:len(text) - len(text.lstrip())]
    return indent + ";"


def sites_of_file(root: Path, relative: str) -> list[Site]:
    if relative.endswith(".py"):
        return python_sites.sites_of_python_file(root, relative)
    lines = (root / relative).read_text(encoding="utf-8").split("\n")
    masked = code_mask(lines)
    sites: list[Site] = []
    previous_code = ""
    for number, (text, code) in enumerate(zip(lines, masked), start=1):
        if not code.strip():
            continue
        if _SKIP_LINE.match(code):
            previous_code = code
            continue
        mutations = _line_sites(text, code)
        deleted = _statement_deletion(text, code, previous_code)
        if deleted is not None:
            mutations.append(("SDL", deleted))
        seen = set()
        for operator, after in mutations:
            if after != text and after not in seen:
                seen.add(after)
                sites.append(Site(relative, number, operator, text, after))
        previous_code = code
    return sites


def source_files(root: Path, folders: list[str], excluded: list[str]) -> list[str]:
    files = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.suffix in (".cpp", ".hpp", ".py") and not any(relative.startswith(e) for e in excluded):
                files.append(relative)
    return sorted(files)


def all_sites(root: Path, folders: list[str], excluded: list[str]) -> list[Site]:
    return [s for f in source_files(root, folders, excluded) for s in sites_of_file(root, f)]
