"""The house keeps its shape: no function over 80 lines, and no module over 500 lines without a reason written at
the top of its docstring (a paragraph starting ``Over 500 lines:``, for a table of data).

No file is exempt. ``python -m tests.test_code_size`` prints every function and module over the limits.
"""

import ast
import sys
from pathlib import Path

from tests.support import ROOT

FUNCTION_LINES = 80
MODULE_LINES = 500
REASON = "Over 500 lines:"


def oversized(root: Path, package: str = "k3infra") -> list[str]:
    """``path:line name (N lines)`` for every function over FUNCTION_LINES and ``path (N lines)`` for every module
    over MODULE_LINES whose docstring gives no reason, under ``root/package``."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        tree = ast.parse(text)
        lines = len(text.splitlines())
        if lines > MODULE_LINES and REASON not in (ast.get_docstring(tree) or ""):
            found.append(f"{rel} ({lines} lines)")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found.append(f"{rel}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_over_80_lines_and_no_module_over_500_without_a_reason() -> None:
    assert oversized(ROOT) == []


def test_a_long_function_and_a_long_module_are_found(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LINES))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(f'"""A module."""\n\n\ndef f() -> None:\n{body}')
    (tmp_path / "pkg" / "table.py").write_text('"""Data.\n\nOver 500 lines: a table."""\n' + "X = 1\n" * MODULE_LINES)
    (tmp_path / "pkg" / "bare.py").write_text('"""Data."""\n' + "X = 1\n" * MODULE_LINES)
    assert oversized(tmp_path, "pkg") == ["pkg/bare.py (501 lines)", "pkg/long.py:4 f (81 lines)"]


if __name__ == "__main__":
    for entry in oversized(ROOT):
        print("over     " + entry)
    sys.exit(0)
