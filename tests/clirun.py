"""Running our commands as a person does: real processes, in a folder of their own, with this
checkout's code, a clean environment (no RAG_RLM_* of the caller) and stderr kept apart.

    run("ask", "How ...?", "-c", "handbook", cwd=folder)        rag-rlm ask ...
    run_ingest(folder / "handbook", "--collection", ..., cwd=folder)
    with Serve(folder, "--port", str(port)) as server: ...       `rag-rlm serve`, stopped by SIGTERM
    Terminal(["chat", "-c", "handbook"], cwd=folder)             in a pseudo-terminal, typed at
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SAMPLE = ROOT / "examples" / "sample"
EVAL_DATA = ROOT / "tests" / "data" / "eval"
TIMEOUT = 300  # a loaded 2-core machine: loading the embedder alone can take many seconds


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAG_RLM_")}
    clean["PYTHONPATH"] = str(ROOT)  # this checkout's rag_rlm, not an installed one
    clean.update(extra)
    return clean


def run(*args: str, cwd: Path, input: str | None = None, extra_env: dict[str, str] | None = None,
        module: str = "rag_rlm.cli") -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", module, *args], cwd=cwd, env=env(**(extra_env or {})), input=input,
                          capture_output=True, text=True, timeout=TIMEOUT)


def run_ingest(*args: str, cwd: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run(*args, cwd=cwd, extra_env=extra_env, module="ingest")


def copy_sample(folder: Path, name: str = "handbook") -> Path:
    """The sample documents in a folder of the test's own (ingest --prune may look at it)."""
    target = folder / name
    shutil.copytree(SAMPLE, target)
    return target


def ingested_sample(folder: Path) -> Iterator[Path]:
    """A module fixture's body: `folder` with the sample ingested as collection "handbook" into
    its own embedded store, which is stopped afterwards (a failed test must not leave it behind)."""
    from rag_rlm.memory import embedded

    copy_sample(folder)
    done = run_ingest("handbook", "--collection", "handbook", cwd=folder)
    assert done.returncode == 0, done.stderr
    yield folder
    if embedded.status(folder / ".rag_rlm" / "pgdata").running:
        embedded.stop(folder / ".rag_rlm" / "pgdata", force=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`rag-rlm serve` in the background until the block ends, then SIGTERM; `exit_code` and
    `stderr` tell how it ended."""

    def __init__(self, cwd: Path, *args: str, port: int | None = None, extra_env: dict[str, str] | None = None,
                 argv: list[str] | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = argv or [PY, "-m", "rag_rlm.cli", "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(command, cwd=cwd, env=env(**(extra_env or {})), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.exit_code: int | None = None
        self.stdout = self.stderr = ""

    def __enter__(self) -> Serve:
        try:
            self.wait_until_up()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve ended with {self.proc.returncode}: {self.proc.stderr.read()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("serve did not come up")
            time.sleep(0.2)

    def stop(self, how: signal.Signals = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(how)
        try:
            self.stdout, self.stderr = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: workers and all
            self.stdout, self.stderr = self.proc.communicate()
        self.exit_code = self.proc.returncode


_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")  # cursor moves, bracketed-paste mode, carriage returns


class Terminal:
    """A command on the slave side of a pseudo-terminal, as its controlling terminal (Ctrl-C
    typed there is a SIGINT, as in a shell); we type on the master side and read what it shows,
    without cursor movements and carriage returns."""

    def __init__(self, args: list[str], cwd: Path, module: str = "rag_rlm.cli"):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))  # wide: no line wrapping
        self.proc = subprocess.Popen([PY, "-m", module, *args], cwd=cwd, env=env(TERM="xterm"),
                                     stdin=slave, stdout=slave, stderr=slave, preexec_fn=_own_terminal)
        os.close(slave)
        self.master = master
        self.pending = ""

    def type(self, keys: str) -> None:
        # a person types after the prompt is drawn; readline puts the terminal in its own mode just
        # after drawing it, and keys written in that instant (a Ctrl-C above all) were seen to be lost
        time.sleep(0.3)
        os.write(self.master, keys.encode())

    def expect(self, text: str | re.Pattern[str], timeout: float = TIMEOUT) -> str:
        """What the terminal showed up to and including `text` (or the pattern's first match),
        which is then forgotten; or fail."""
        pattern = text if isinstance(text, re.Pattern) else re.compile(re.escape(text))
        deadline = time.monotonic() + timeout
        while (found := pattern.search(self.pending)) is None:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; the terminal shows:\n{self.pending}"
            assert self._read(min(left, 1.0)), f"ended without showing {text!r}:\n{self.pending}"
        shown, self.pending = self.pending[:found.end()], self.pending[found.end():]
        return shown

    def rest(self, timeout: float = TIMEOUT) -> str:
        """All it shows until it ends."""
        deadline = time.monotonic() + timeout
        while self._read(max(0.0, deadline - time.monotonic())):
            assert time.monotonic() < deadline, f"still running; the terminal shows:\n{self.pending}"
        shown, self.pending = self.pending, ""
        return shown

    def close(self) -> int:
        try:
            return self.proc.wait(60)
        finally:
            os.close(self.master)

    def _read(self, timeout: float) -> bool:
        """Read what is there within `timeout`; False once the command's side is closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every holder of the slave side is gone
                return False
            if not data:
                return False
            self.pending += _CONTROL.sub("", data.decode(errors="replace"))
        return True


def _own_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # as a shell starts a foreground job: Ctrl-C interrupts, even when whoever started the tests
    # ignored SIGINT (a background job of a script does; the child would inherit it and Python
    # would then never raise KeyboardInterrupt)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def imported_modules(stderr: str) -> set[str]:
    """The modules a `python -X importtime` run imported, from its stderr."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names
