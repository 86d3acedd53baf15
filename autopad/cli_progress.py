"""Progress on stderr for the command line: a bar for counted work, a line for work of unknown length.

``Bar`` draws with tqdm when it is installed (well kept, no dependencies of its own) and as a plain
``\\r`` line otherwise; ``Bar.update(done, total, key)`` is the protocol of the tuner's own measuring
line (``tune._Progress``), so the same object can be handed to it. ``activity(text)`` shows a spinner
with the elapsed seconds while something long and silent runs (a model-only ranking of thousands of
candidates takes seconds on a small machine). Both print only to a terminal.

Why a wrapped stderr: anything printed to stderr meanwhile (a warning, a note from the tuner) would land in
the middle of the line. While a line is shown, stderr is a proxy that clears the line before letting any
other text through, and warnings are shown as one line each. A write that starts with ``\\r`` means
someone else draws a progress line now (the tuner's measuring bar): the spinner then stops for good.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Bar", "activity", "warnings_to"]

_FRAMES = "|/-\\"


@contextlib.contextmanager
def warnings_to(write: Callable[[str], None]) -> Iterator[None]:
    """Show warnings raised inside the block as one line each through ``write``."""
    old = warnings.showwarning

    def show(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        write(f"autopad: warning: {' '.join(str(message).split())}")

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = old


class Bar:
    """A counted progress bar on stderr: tqdm when installed, else one redrawn line; off when not a
    terminal (or ``enabled=False``)."""

    def __init__(self, total: int, desc: str, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.total, self.desc, self.done = total, desc, 0
        self._tqdm: Any = None
        if self.enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._tqdm = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)

    def update(self, done: int, total: int | None = None, key: str = "") -> None:
        """Show ``done`` of ``total`` (default: the total given at the start), with ``key`` as a note."""
        if not self.enabled:
            return
        total = self.total if total is None else total
        if self._tqdm is not None:
            self._tqdm.total = total
            self._tqdm.set_postfix_str(key[:50], refresh=False)
            self._tqdm.update(done - self.done)
        else:
            bar = "#" * int(20 * done / max(total, 1))
            sys.stderr.write(f"\r{self.desc} [{bar:20}] {done}/{total} {key[:50]:50}")
            sys.stderr.flush()
        self.done = done

    def write(self, text: str) -> None:
        """Print a line of text on stderr without breaking the bar."""
        if self._tqdm is not None:
            self._tqdm.write(text, file=sys.stderr)
        elif self.enabled:
            sys.stderr.write("\r" + " " * 100 + "\r" + text + "\n")
            self.update(self.done, self.total)
        else:
            print(text, file=sys.stderr)

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.enabled:
            sys.stderr.write("\r" + " " * 100 + "\r")
            sys.stderr.flush()

    def __enter__(self) -> Bar:
        self._warn = warnings_to(self.write)
        self._warn.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._warn.__exit__(*exc)
        self.close()


class _Line:
    """stderr while a spinner is shown: other text first clears the spinner's line."""

    def __init__(self, real: Any) -> None:
        self.real, self.lock, self.width, self.stopped = real, threading.Lock(), 0, False

    def _clear(self) -> None:
        if self.width:
            self.real.write("\r" + " " * self.width + "\r")
            self.width = 0

    def draw(self, text: str) -> None:
        with self.lock:
            if not self.stopped:
                self.real.write("\r" + text)
                self.width = len(text)
                self.real.flush()

    def write(self, s: str) -> int:
        with self.lock:
            self._clear()
            if s.startswith("\r"):  # another progress line takes over
                self.stopped = True
            return self.real.write(s)

    def flush(self) -> None:
        self.real.flush()

    def stop(self) -> None:
        with self.lock:
            self._clear()
            self.stopped = True
            self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@contextlib.contextmanager
def activity(text: str, enabled: bool = True, delay_s: float = 0.5) -> Iterator[None]:
    """A spinner with the elapsed seconds on stderr while the block runs (after ``delay_s``: short work
    shows nothing); warnings inside come out as one clean line each."""
    if not enabled:
        yield
        return
    real = sys.stderr
    line = _Line(real)
    done = threading.Event()
    t0 = time.perf_counter()

    def spin() -> None:
        if done.wait(delay_s):
            return
        n = 0
        while not done.wait(0.1) and not line.stopped:
            line.draw(f"{_FRAMES[n % 4]} autopad: {text} ({time.perf_counter() - t0:.0f} s)")
            n += 1

    thread = threading.Thread(target=spin, name="autopad-activity", daemon=True)
    sys.stderr = line
    thread.start()
    try:
        with warnings_to(lambda msg: print(msg, file=sys.stderr)):
            yield
    finally:
        done.set()
        thread.join()
        line.stop()
        sys.stderr = real
