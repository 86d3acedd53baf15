"""autopad's own worker entry point, ``python -m autopad.worker``, and the parent's handle on such a worker.

Why: a benchmark or sweep worker used to be a ``multiprocessing`` "spawn" child, and spawn re-imports the
parent's ``__main__`` in the child. A user script without an ``if __name__ == "__main__":`` guard (most
PyTorch scripts and every notebook) then ran again inside the worker, failed at bootstrap, and the parent
waited for a first message for ``compile_timeout_s`` (600 s), up to once per candidate: a 10-minute run
for nothing. PyTorch's compile workers avoid this by starting from a ``python -m`` entry point of their
own; so does autopad: the parent starts ``sys.executable -m autopad.worker`` with ``subprocess`` and the
user's main module is never imported. A spec class defined in that script travels by value
(``bench.spec_ref``: cloudpickle), the parent's ``sys.path`` travels with the job, and the environment
(``CUDA_VISIBLE_DEVICES``, ``AUTOPAD_*``) is inherited.

Transport: two pipes handed over by descriptor (``pass_fds``), one each way, framed and pickled by
``multiprocessing.connection.Connection`` (no process is spawned by multiprocessing). The child's stdout
and stderr are one captured pipe whose last 8 KB go into a failure's reason (``AUTOPAD_WORKER_ECHO=1``
also copies them to this process's stderr). A dead worker is noticed from the pipe's end of file (the
moment the process exits; the child makes its descriptors non-inheritable, so a compiler it started cannot
hold the pipe open) or from its exit status, polled every 0.1 s: never from a timeout. A worker whose
parent dies sees its own input pipe close and exits.

The parent sends its ``sys.path`` first, then the hello. Modes: ``--job`` runs one benchmark job (hello
``{"target", "job"}``: ``target`` is a "module:function" called with ``(job, out)``, where ``out.put(msg)``
sends a message; tests swap in fake children); ``--sweep`` serves sweep items (``autopad.sweep._serve``).
POSIX only (``pass_fds``).
"""

from __future__ import annotations

import importlib
import os
import pickle
import queue
import signal
import site
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

__all__ = ["WorkerProcess", "WorkerDied", "TIMEOUT", "resolve", "target_name", "main"]

TAIL_BYTES = 8192  # how much of a worker's output a failure reason may quote
POLL_S = 0.1  # how often a waiting parent checks that the worker still lives
TIMEOUT = object()  # WorkerProcess.recv's answer when nothing came in time
_STOP = object()


class WorkerDied(Exception):
    """The worker process ended (or closed its pipe) before answering; ``str()`` says how, with its output."""

    def __init__(self, exitcode: int | None, tail: str) -> None:
        self.exitcode = exitcode
        self.tail = tail
        if exitcode is None:
            how = "closed its pipe"
        elif exitcode < 0:
            try:
                how = f"killed by {signal.Signals(-exitcode).name}"
            except ValueError:
                how = f"killed by signal {-exitcode}"
        else:
            how = f"exit code {exitcode}"
        super().__init__(how + (f"; its last output: {tail}" if tail else ""))


def resolve(name: str) -> Any:
    """The function a "module:function" string names (imported in the worker, never the user's main)."""
    mod, _, attr = name.rpartition(":")
    obj: Any = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def target_name(target: Any) -> str:
    """A "module:function" for ``target`` (a string is kept); a function of ``__main__`` cannot be named."""
    if isinstance(target, str):
        return target
    mod, qual = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not mod or mod == "__main__" or "<" in qual:
        raise ValueError(f"target: {target!r} must be a module-level function of an importable module")
    return f"{mod}:{qual}"


def _package_root() -> str | None:
    """The folder holding this autopad package, when the child's default ``sys.path`` may not have it
    (a repository checkout put on ``sys.path`` by a script); None where Python finds it anyway."""
    root = str(Path(__file__).resolve().parent.parent)
    known: set[str] = set()
    try:  # some virtual environments' site module lacks these
        known |= set(site.getsitepackages()) | {site.getusersitepackages()}
    except AttributeError:
        pass
    known |= set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    return None if root in known else root


class WorkerProcess:
    """The parent's handle on one ``python -m autopad.worker`` child: send, receive with a timeout, kill."""

    def __init__(self, mode: str, hello: dict[str, Any] | None, warm: bool = False) -> None:
        """Start the child. ``hello`` None: a spare that waits for ``begin``; ``warm``: it imports torch and
        initialises CUDA while it waits (``_warm``), the ~3 s a job's worker otherwise spends first."""
        # pickled before anything starts: an unpicklable job is this caller's error, raised here at once
        first = [ForkingPickler.dumps(list(sys.path))]
        if hello is not None:
            first.append(ForkingPickler.dumps(hello))
        in_r, in_w = os.pipe()  # parent -> child
        out_r, out_w = os.pipe()  # child -> parent
        env = dict(os.environ)
        root = _package_root()
        if root:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))
        cmd = [sys.executable or "python3", "-m", "autopad.worker", f"--{mode}", f"--fds={in_r},{out_w}"]
        cmd += ["--warm"] if warm else []
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(in_r, out_w),
                env=env,
                start_new_session=True,  # its own process group: a hung worker's compilers die with it
            )
        except BaseException:
            for fd in (in_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)  # only the child holds these now: its exit reads as end of file
            os.close(out_w)
        self.from_spare = hello is None  # started ahead of its job (bench_pool: retried afresh if it dies)
        self.tx = Connection(in_w, readable=False)
        self.rx = Connection(out_r, writable=False)
        self._tail = bytearray()
        self._echo = os.environ.get("AUTOPAD_WORKER_ECHO", "") not in ("", "0")
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        # messages leave from a thread of their own, in order: a hello larger than a pipe's buffer, sent
        # to a child that never reads it, cannot block this process (the timeouts still apply)
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send_loop, daemon=True)
        self._sender.start()
        for buf in first:  # the path first, alone: unpickling the hello may need the parent's imports
            self._outbox.put(buf)

    def begin(self, hello: dict[str, Any]) -> None:
        """Hand a spare (started with no hello) its job: pickled now, so an unpicklable one raises here."""
        self._outbox.put(ForkingPickler.dumps(hello))

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def exitcode(self) -> int | None:
        return self.proc.poll()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read_output(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            if self._echo:
                sys.stderr.write(chunk.decode("utf-8", "replace"))
            self._tail += chunk
            if len(self._tail) > 4 * TAIL_BYTES:
                del self._tail[:-TAIL_BYTES]

    def tail(self) -> str:
        """The last lines the worker printed (stdout and stderr), at most ``TAIL_BYTES``."""
        self._reader.join(timeout=0.5)  # after an exit, let the reader take what was left in the pipe
        text = bytes(self._tail[-TAIL_BYTES:]).decode("utf-8", "replace").strip()
        return text

    def _send_loop(self) -> None:
        while True:
            msg = self._outbox.get()
            if msg is _STOP:
                return
            try:
                self.tx.send_bytes(msg)
            except (OSError, ValueError):  # the child is gone: recv() reports it
                return

    def send(self, msg: Any) -> None:
        """Queue one message for the worker (pickled now, so an unpicklable one raises here; sending never
        blocks; a dead worker shows in ``recv``)."""
        self._outbox.put(ForkingPickler.dumps(msg))

    def _died(self) -> WorkerDied:
        try:
            code = self.proc.wait(timeout=1.0)  # a closed pipe and the exit come together
        except subprocess.TimeoutExpired:
            code = None
        return WorkerDied(code, self.tail())

    def recv(self, timeout: float) -> Any:
        """The next message, or ``TIMEOUT`` after ``timeout`` seconds of silence; ``WorkerDied`` as soon
        as the child has ended (end of file on its pipe, or its exit seen within ``POLL_S``)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if self.rx.poll(max(0.0, min(POLL_S, left))):
                try:
                    return self.rx.recv()
                except (EOFError, OSError, pickle.UnpicklingError, AttributeError, ImportError):
                    raise self._died() from None
            if self.proc.poll() is not None and not self.rx.poll(0):
                raise self._died()
            if left <= 0:
                return TIMEOUT

    def kill(self) -> None:
        """Kill the worker and anything it started (its process group)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover (a process stuck in the kernel)
            pass

    def close(self, grace_s: float = 0.0) -> None:
        """Stop sending, give the worker up to ``grace_s`` to exit on its own, kill it, close the pipes."""
        self._outbox.put(_STOP)
        if grace_s > 0:
            self._sender.join(timeout=grace_s)
            if not self._sender.is_alive():
                self.tx.close()  # end of file: an idle worker exits
                try:
                    self.proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    pass
        self.kill()
        self._sender.join(timeout=1.0)  # a write to the dead worker's pipe has failed by now
        for conn in (self.tx, self.rx):
            if not conn.closed:
                conn.close()
        self._reader.join(timeout=1.0)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# ---- the child ------------------------------------------------------------------------------------------


class _Out:
    """What a job target writes to: ``put(msg)`` sends one message to the parent at once."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def put(self, msg: Any) -> None:
        self.conn.send(msg)


def _exit_when_parent_goes(conn: Connection) -> None:
    """Exit as soon as the parent closes our input pipe (it finished with us, or it died)."""
    try:
        while True:
            conn.recv()
    except BaseException:
        os._exit(0)


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _warm() -> None:
    """What every benchmark job's worker does first, done by a spare before its job arrives: import torch and
    initialise CUDA (the driver, not a context: the job picks its device). Failures are left to the job,
    which meets them again and reports them."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.init()
        import autopad.bench_local  # noqa: F401  (the job's own imports)
    except Exception:
        pass


def main(argv: list[str] | None = None) -> int:
    """The worker process: read the hello, then run a benchmark job (``--job``) or serve sweep items."""
    args = sys.argv[1:] if argv is None else argv
    mode = "sweep" if "--sweep" in args else "job"
    fds = next(a for a in args if a.startswith("--fds=")).split("=", 1)[1]
    rfd, wfd = (int(x) for x in fds.split(","))
    for fd in (rfd, wfd):
        os.set_inheritable(fd, False)  # a compiler this worker starts must not keep the pipes open
    rx, tx = Connection(rfd, writable=False), Connection(wfd, readable=False)
    try:
        path = [p for p in rx.recv() if isinstance(p, str)]
        sys.path[:] = path + [p for p in sys.path if p not in path]  # the parent's imports resolve here too
        if mode == "job" and "--warm" in args:  # a spare: ready its imports while the hello is not here
            _warm()
        hello = rx.recv()
    except EOFError:
        return 0
    except Exception as exc:  # the job refers to something this process cannot import
        tx.send(("fatal", f"the worker could not read its job: {_short(exc)}"))
        return 1
    if mode == "sweep":
        from autopad.sweep import _serve

        _serve(hello, rx, tx)
        return 0
    try:
        target = resolve(hello["target"])
    except Exception as exc:
        tx.send(("fatal", f"the worker could not import its target {hello['target']!r}: {_short(exc)}"))
        return 1
    threading.Thread(target=_exit_when_parent_goes, args=(rx,), daemon=True).start()
    tx.send(("ready",))
    target(hello["job"], _Out(tx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
