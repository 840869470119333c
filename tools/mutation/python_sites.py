"""Mechanical mutation sites of Python source, for the package nsverify (python/nsverify): the
operators of sites.py, found with the standard library's tokenizer, so that nothing inside a
string, a docstring or a comment is ever mutated.

A site changes one physical line (mutation_site.Site, applied by replacing that line):
  ROR  < <=, > >=, == !=, is / is not, in / not in
  AOR  + -, * /, // *, % *, and their augmented assignments
  LCR  and / or
  NEG  `if c:` / `elif c:` / `while c:` -> `... not (c):` when the condition is on the line; a `not` dropped
  CRP  an integer literal off by one (never below zero)
  MMX  min and max swapped (the builtins)
  BOL  True and False swapped
  SDL  a one-line simple statement (a call or an assignment) replaced by `pass`
"""
from __future__ import annotations

import io
import keyword
import tokenize
from pathlib import Path

from mutation_site import Site

_ROR = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
_AOR = {"+": "-", "-": "+", "*": "/", "/": "*", "//": "*", "%": "*",
        "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*="}
_LCR = {"and": "or", "or": "and"}
_SWAP = {"min": "max", "max": "min", "True": "False", "False": "True"}
_SWAP_OPERATOR = {"min": "MMX", "max": "MMX", "True": "BOL", "False": "BOL"}
_CONDITION_KEYWORDS = ("if", "elif", "while")
# Lines whose deletion is not a statement deletion (or would not parse as one).
_NOT_DELETABLE = set(keyword.kwlist) - {"await", "None", "True", "False", "not", "lambda"}


def _splice(line: str, start: int, end: int, new: str) -> str:
    return line[:start] + new + line[end:]


def _binary(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """Whether the operator token at i is binary: an operand ends just before it."""
    if i == 0:
        return False
    before = tokens[i - 1]
    return before.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING) and before.string not in keyword.kwlist \
        or before.string in (")", "]", "}") or before.string in ("None", "True", "False")


def _token_sites(line: str, tokens: list[tokenize.TokenInfo]) -> list[tuple[str, str]]:
    """(operator, mutated line) for the single-line tokens of one physical line."""
    found: list[tuple[str, str]] = []
    for i, t in enumerate(tokens):
        (_, start), (_, end) = t.start, t.end
        nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
        prev = tokens[i - 1].string if i > 0 else ""
        if t.type == tokenize.OP and t.string in _ROR:
            found.append(("ROR", _splice(line, start, end, _ROR[t.string])))
        elif t.type == tokenize.OP and t.string in _AOR and (t.string.endswith("=") or _binary(tokens, i)):
            found.append(("AOR", _splice(line, start, end, _AOR[t.string])))
        elif t.type == tokenize.NAME and t.string in _LCR:
            found.append(("LCR", _splice(line, start, end, _LCR[t.string])))
        elif t.type == tokenize.NAME and t.string == "is" and nxt != "not":
            found.append(("ROR", _splice(line, start, end, "is not")))
        elif t.type == tokenize.NAME and t.string == "in" and prev != "not" and _binary(tokens, i):
            found.append(("ROR", _splice(line, start, end, "not in")))
        elif t.type == tokenize.NAME and t.string == "not" and nxt not in ("in",) and prev not in ("is",):
            found.append(("NEG", _splice(line, start, tokens[i + 1].start[1], "") if i + 1 < len(tokens) else line))
        elif t.type == tokenize.NUMBER and t.string.isdigit():
            value = int(t.string)
            for new in (value + 1, value - 1):
                if new >= 0:
                    found.append(("CRP", _splice(line, start, end, str(new))))
        elif t.type == tokenize.NAME and t.string in _SWAP and prev != "." and (t.string in ("True", "False") or nxt == "("):
            found.append((_SWAP_OPERATOR[t.string], _splice(line, start, end, _SWAP[t.string])))
    return found


def _condition_negation(line: str, tokens: list[tokenize.TokenInfo]) -> str | None:
    """`if c:` -> `if not (c):` when the whole condition and its colon are on this line."""
    if not tokens or tokens[0].string not in _CONDITION_KEYWORDS:
        return None
    depth = 0
    for t in tokens[1:]:
        if t.string in "([{":
            depth += 1
        elif t.string in ")]}":
            depth -= 1
        elif t.string == ":" and depth == 0:
            begin, colon = tokens[1].start[1], t.start[1]
            return _splice(line, begin, colon, f"not ({line[begin:colon].rstrip()})")
    return None


def _statement_deletion(line: str, tokens: list[tokenize.TokenInfo], whole_statement: bool) -> str | None:
    """`pass` for a one-line simple statement that calls or assigns."""
    if not whole_statement or not tokens or tokens[0].type != tokenize.NAME or tokens[0].string in _NOT_DELETABLE:
        return None
    strings = [t.string for t in tokens]
    if ":" in strings and strings[-1] == ":":
        return None  # a compound statement's header
    assigns = any(t.type == tokenize.OP and t.string in ("=", "+=", "-=", "*=", "/=") for t in tokens)
    if not assigns and "(" not in strings:
        return None
    indent = line[:len(line) - len(line.lstrip())]
    return indent + "pass"


def sites_of_python_file(root: Path, relative: str) -> list[Site]:
    text = (root / relative).read_text(encoding="utf-8")
    lines = text.split("\n")
    by_line: dict[int, list[tokenize.TokenInfo]] = {}
    statement_lines: dict[int, int] = {}  # first line of each logical line -> its last line
    first = None
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type == tokenize.NEWLINE and first is not None:
            statement_lines[first] = t.start[0]
            first = None
        if t.type in skip:
            continue
        if first is None:
            first = t.start[0]
        if t.type == tokenize.STRING and t.start[0] != t.end[0]:
            continue  # a multi-line string (a docstring): nothing in it is mutated
        if t.start[0] == t.end[0]:
            by_line.setdefault(t.start[0], []).append(t)
    sites: list[Site] = []
    for number in sorted(by_line):
        line, tokens = lines[number - 1], by_line[number]
        mutations = _token_sites(line, tokens)
        negated = _condition_negation(line, tokens)
        if negated is not None:
            mutations.append(("NEG", negated))
        deleted = _statement_deletion(line, tokens, statement_lines.get(number) == number)
        if deleted is not None:
            mutations.append(("SDL", deleted))
        seen = set()
        for operator, after in mutations:
            if after != line and after not in seen and _parses(lines, number, after):
                seen.add(after)
                sites.append(Site(relative, number, operator, line, after))
    return sites


def _parses(lines: list[str], number: int, after: str) -> bool:
    """Whether the file with the line mutated is still Python: a mutant that is not would fail
    every test at import and be counted as killed (C++ mutants that do not compile are stillborn;
    these are never sampled)."""
    mutated = lines[:number - 1] + [after] + lines[number:]
    try:
        compile("\n".join(mutated), "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True
