"""Refusing, in one line, a sweep that a script starts at its top level without a ``__main__`` guard.

The embedded LocalCluster starts its workers with multiprocessing's ``spawn`` (Dask's default): each
worker process imports the user's main script again, as ``__mp_main__``. A sweep called at the script's
top level then runs once more in every worker, each of which tries to start a cluster of its own while it
is still starting: a screen of tracebacks from every process and a nanny that "failed to start". Nothing
inside the worker can stop that cleanly, so the driver looks before it spawns anything: if the main
script's module-level code is on the call stack (of this thread, or of the main thread that started it)
at a line outside ``if __name__ == "__main__":``, the workers would run it again.
"""

from __future__ import annotations

import ast
import sys
import threading
from functools import lru_cache
from pathlib import Path
from types import FrameType

GUARD = 'if __name__ == "__main__":'


class MissingMainGuard(SystemExit):
    """``sweep`` was called from a script's top level, outside ``if __name__ == "__main__":``, with the
    embedded LocalCluster. A ``SystemExit`` (exit status 2) whose one line was printed to stderr: a
    traceback would say nothing more, and the script must be edited before it can run."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(2)

    def __str__(self) -> str:
        return self.message


def refuse_unguarded_main() -> None:
    """Print one line and raise :class:`MissingMainGuard` when spawned workers would re-run this sweep."""
    where = unguarded_call()
    if where is None:
        return
    script, line = where
    message = (f"error: ordercube.sweep is called at the top level of {script} (line {line}), outside a __main__ guard: "
               f"the worker processes of its LocalCluster import {Path(script).name} again and would run the sweep "
               f"again; put the code that runs the sweep under '{GUARD}'")
    print(message, file=sys.stderr, flush=True)
    raise MissingMainGuard(message)


def unguarded_call() -> tuple[str, int] | None:
    """(the main script, the line) when its module-level code runs, outside a ``__main__`` guard, on the
    stack of this thread or of the main thread; ``None`` when spawned workers would not re-run it (an
    interactive session, Jupyter, ``python -c``, or the call inside the guard)."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if main is None or not script or not str(script).endswith(".py"):
        return None
    frames = [sys._getframe(1)]
    main_thread = threading.main_thread()
    if threading.current_thread() is not main_thread and main_thread.ident is not None:
        frames.append(sys._current_frames().get(main_thread.ident))
    for frame in frames:
        line = _module_line(frame, main.__dict__)
        if line is not None and not _guarded(str(Path(script).resolve()), line):
            return str(script), line
    return None


def _module_line(frame: FrameType | None, namespace: dict) -> int | None:
    """The line at which the main module's top-level code is on ``frame``'s stack, if it is."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is namespace:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _guarded(script: str, line: int) -> bool:
    """Whether ``line`` of ``script`` lies in the body of an ``if __name__ == "__main__":`` (or in the
    ``else`` of its ``!=`` form). A script that cannot be read or parsed is given the benefit of the doubt."""
    spans = _guarded_spans(script)
    return spans is None or any(first <= line <= last for first, last in spans)


@lru_cache(maxsize=8)
def _guarded_spans(script: str) -> tuple[tuple[int, int], ...] | None:
    try:
        tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (kind := _main_test(node.test)):
            body = node.body if kind == "==" else node.orelse
            if body:
                spans.append((body[0].lineno, max(statement.end_lineno or statement.lineno for statement in body)))
    return tuple(spans)


def _main_test(test: ast.expr) -> str | None:
    """'==' for ``__name__ == "__main__"``, '!=' for its negation (either operand order), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    operands = {_name_of(test.left), _name_of(test.comparators[0])}
    if operands != {"__name__", "'__main__'"}:
        return None
    return "==" if isinstance(test.ops[0], ast.Eq) else "!="


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return repr(node.value)
    return None
