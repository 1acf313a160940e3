"""Counts the hand-written rules of the answerer: regular expressions, English word lists and
numeric thresholds in `rag_rlm/reasoning/` (plus the reader's data construction, reported apart).

    python bench/count_rules.py [--rev GIT_REV]     # the working tree, or the files of a commit

- regex: a module-level UPPER_CASE string constant that is a pattern, a `re.compile(...)` or a `re.search/match/fullmatch/findall/finditer/sub/split` call
  whose pattern is written in the code (a literal or an f-string);
- word list: a set, frozenset, tuple or list of five or more string literals, or a literal
  string `.split()` into five or more words;
- threshold: a module-level UPPER_CASE name bound to a number (or a tuple of numbers, each
  counted), a numeric default of a function parameter, and a numeric field default of a class
  (the fields of the `Thresholds` settings object).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RE_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "split", "subn"}


def count(source: str) -> dict[str, int]:
    tree = ast.parse(source)
    regexes = words = thresholds = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args \
                and isinstance(node.args[0], ast.Constant | ast.JoinedStr):
            regexes += 1
        if isinstance(node, ast.Set | ast.Tuple | ast.List) and \
                sum(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts) >= 5:
            words += 1
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split" \
                and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str) \
                and not node.args and len(node.func.value.value.split()) >= 5:
            words += 1
        if isinstance(node, ast.arguments):
            thresholds += sum(_numeric(d) for d in [*node.defaults, *node.kw_defaults] if d is not None)
        if isinstance(node, ast.ClassDef):  # a settings object's numeric fields (Thresholds)
            thresholds += sum(_numeric(b.value) for b in node.body if isinstance(b, ast.AnnAssign) and b.value is not None)
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        value = getattr(stmt, "value", None)
        for target in targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = value.elts if isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple) else [value]
            for name, v in zip(names, values, strict=False):
                if isinstance(name, ast.Name) and name.id.lstrip("_").isupper() and _pattern(v):
                    regexes += 1
                if isinstance(name, ast.Name) and name.id.lstrip("_").isupper() and v is not None:
                    thresholds += _numeric(v) if not isinstance(v, ast.Tuple) else sum(_numeric(e) for e in v.elts)
    return {"regexes": regexes, "word_lists": words, "thresholds": thresholds}


def _pattern(node: ast.AST | None) -> bool:
    """A regular expression kept as a string constant (compiled where it is used)."""
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
    return any(mark in text for mark in ("\\b", "(?", "\\d", "\\s", "\\w"))


def _numeric(node: ast.AST) -> int:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return int(isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool))


def files(rev: str | None, folder: str) -> dict[str, str]:
    if rev is None:
        return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / folder).glob("*.py"))}
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:{folder}"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return {f"{folder}/{n}": subprocess.run(["git", "show", f"{rev}:{folder}/{n}"], cwd=ROOT, capture_output=True,
                                            text=True, check=True).stdout for n in names if n.endswith(".py")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    args = parser.parse_args()
    total = {"regexes": 0, "word_lists": 0, "thresholds": 0}
    print(f"{'file':45} regexes  word lists  thresholds")
    for name, source in files(args.rev, "rag_rlm/reasoning").items():
        c = count(source)
        for k in total:
            total[k] += c[k]
        print(f"{name:45} {c['regexes']:7} {c['word_lists']:11} {c['thresholds']:11}")
    print(f"{'total (the answerer)':45} {total['regexes']:7} {total['word_lists']:11} {total['thresholds']:11}")


if __name__ == "__main__":
    main()
