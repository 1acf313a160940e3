"""PostgreSQL connections for the stores: a pool that fails fast in an outage and recovers at once.

What the bare `psycopg_pool.ConnectionPool` would do in an outage (issue 9): every request waits
its full acquire timeout (30 s) for a connection that cannot come; after the server is back, the
pool's reconnection is backing off exponentially (1, 2, 4 ... s), so requests keep failing for up
to a minute, and the connections broken by the restart are handed out to the first requests.
`StorePool` wraps the pool:

- `timeout` (the `store_timeout` setting) bounds both the wait for a pooled connection and libpq's
  `connect_timeout`: a request during an outage is a StoreError (HTTP 503) within seconds.
- Every connection is checked before use (`ConnectionPool.check_connection`, an empty query). We
  call it here rather than as the pool's `check=` callback because the pool sleeps a backoff
  second after each failed check and tries the next idle connection, and after a restart every
  idle connection fails it. The check has `timeout` too: a server (or network) that went silent
  while the connection sat in the pool would otherwise block its read for ever (libpq has no
  read timeout, and the server cannot time out what it never receives), so a watchdog shuts
  the socket down and the check fails like any dead connection's.
- `statement_timeout` (the `store_statement_timeout` setting) is set on every connection as it is
  made: a statement that runs longer (a lock never released, a server too loaded to finish) is
  cancelled by the server and is a StoreError, so it cannot hold a request and a pooled connection
  for ever. It is enforced by the server: a server that stops answering altogether (a network
  that drops packets) is bounded only by TCP (keepalives, `tcp_user_timeout` in the DSN).
- A dead connection or an acquire timeout marks the store down. Requests then skip the pool and
  connect directly (refused at once while the outage lasts); the first that connects is served on
  that connection, and the pool replaces all its dead idle connections at once (`pool.check()`),
  so no request waits on the pool's reconnection backoff or is handed a dead connection.

Error messages never carry raw SQL, table names or socket paths (they reach HTTP clients): the
psycopg error goes to the log, the StoreError says what failed and the SQLSTATE.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import StoreError

log = logging.getLogger("rag_rlm.store")
QUERY_CANCELED = "57014"  # statement_timeout (or a cancel request)


def connect_kwargs(timeout: float) -> dict[str, Any]:
    """libpq's `connect_timeout` is whole seconds, and values under 2 are raised to 2."""
    return {"connect_timeout": max(2, math.ceil(timeout))}


def unreachable(timeout: float) -> StoreError:
    return StoreError(f"PostgreSQL is unreachable (store_timeout {timeout:g} s); retry shortly")


def store_error(what: str, error: psycopg.Error) -> StoreError:
    """A StoreError for a failed database call, safe to show to an HTTP client."""
    log.warning("store error while %s: %s", what, error)
    if isinstance(error, psycopg.OperationalError) and _connection_lost(error):
        return StoreError(f"{what}: the connection to PostgreSQL was lost; retry shortly")
    if error.sqlstate == QUERY_CANCELED:
        return StoreError(f"{what}: the database did not finish in time (store_statement_timeout); retry shortly")
    state = f", SQLSTATE {error.sqlstate}" if error.sqlstate else ""
    return StoreError(f"{what}: database error ({type(error).__name__}{state})")


def _connection_lost(error: psycopg.Error) -> bool:
    # class 08 is "connection exception", 57P0x is "operator intervention" (server shutting down);
    # a socket closed under a query has no SQLSTATE at all
    return error.sqlstate is None or error.sqlstate.startswith(("08", "57P"))


class StorePool:
    """A `ConnectionPool` with the outage behaviour described in the module docstring."""

    def __init__(self, dsn: str, *, timeout: float, max_size: int, name: str, statement_timeout: float = 0.0,
                 configure: Callable[[psycopg.Connection], None] | None = None, autocommit: bool = False):
        self.timeout = timeout
        self.statement_timeout = statement_timeout
        self._dsn = dsn
        self._configure = configure
        self._kwargs = {**connect_kwargs(timeout), "autocommit": autocommit}
        self._down = threading.Event()  # set when a request found the store unreachable
        try:
            self._pool = ConnectionPool(
                dsn, min_size=1, max_size=max_size, kwargs=self._kwargs, configure=self._setup, name=name,
                timeout=timeout, reconnect_timeout=max(timeout, 1.0), open=True)
        except psycopg.Error as e:
            raise store_error("opening the connection pool", e) from e

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A healthy connection (StoreError within `timeout` when there is none to be had)."""
        conn = None if self._down.is_set() else self._checked()
        if conn is None:  # down, or just found a dead connection: see whether the server answers
            with self._direct() as conn:
                yield conn
            return
        try:
            yield conn
        except psycopg.OperationalError:
            if conn.broken:  # the server went away under the query: check the others first next time
                self._mark_down("a connection broke")
            raise
        finally:
            self._pool.putconn(conn)  # a broken one is discarded and replaced by the pool

    def close(self) -> None:
        self._pool.close()

    def _setup(self, conn: psycopg.Connection) -> None:
        """A new connection: its statement timeout (a session setting, not a libpq `options`
        parameter, so a DSN's own options stay), then the store's own configuration."""
        if self.statement_timeout > 0:
            conn.execute("SELECT set_config('statement_timeout', %s, false)",
                         (f"{max(1, round(self.statement_timeout * 1000))}ms",))
        if self._configure is not None:
            self._configure(conn)
        if not conn.autocommit:
            conn.commit()

    def _checked(self) -> psycopg.Connection | None:
        """A pooled connection that answers, or None when it did not (the server restarted or
        stopped since it was last used)."""
        try:
            conn = self._pool.getconn(self.timeout)
        except PoolTimeout:
            self._mark_down(f"no connection within {self.timeout:g} s")
            raise unreachable(self.timeout) from None
        try:
            with _deadline(conn, self.timeout):
                ConnectionPool.check_connection(conn)
        except psycopg.Error:
            self._pool.putconn(conn)  # broken: the pool discards it
            self._mark_down("a pooled connection was dead")
            return None
        return conn

    @contextmanager
    def _direct(self) -> Iterator[psycopg.Connection]:
        """After an outage: one connection of our own (refused at once while the server is down)."""
        try:
            conn = psycopg.connect(self._dsn, **self._kwargs)
            self._setup(conn)
        except psycopg.OperationalError as e:
            log.debug("store still unreachable: %s", e)
            raise unreachable(self.timeout) from None
        if self._down.is_set():
            self._down.clear()
            log.warning("store reachable; replacing the pool's dead connections")
            self._pool.check()  # the idle ones died with the server: replace them all now
        with conn:
            yield conn

    def execute(self, query: str, params: tuple[Any, ...], *, what: str, many: bool = False) -> Any:
        """One statement on a pooled connection: its rows (all with `many`, else the first), None
        for a statement that returns none; a psycopg error becomes a StoreError naming `what`."""
        try:
            with self.connection() as conn:
                cur = conn.execute(query, params)
                if not cur.description:
                    return None
                return cur.fetchall() if many else cur.fetchone()
        except psycopg.Error as e:
            raise store_error(what, e) from e

    def _mark_down(self, why: str) -> None:
        if not self._down.is_set():
            log.warning("store unreachable (%s); requests fail fast until it answers again", why)
        self._down.set()


class _Watchdog:
    """One thread that runs every pool's deadline actions (a timer thread of its own for each
    connection checkout cost ~0.12 ms of CPU, a dozen times an answer). An action runs under the
    watchdog's lock, so once `disarm` has returned it never runs."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[int, tuple[float, Callable[[], None]]] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None
        self._wakes_at = float("inf")  # when the thread wakes next: only an earlier deadline wakes it sooner

    def arm(self, seconds: float, action: Callable[[], None]) -> int:
        with self._cond:
            token = next(self._tokens)
            deadline = time.monotonic() + seconds
            self._due[token] = (deadline, action)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="rag_rlm.store-watchdog", daemon=True)
                self._thread.start()
            elif deadline < self._wakes_at:
                self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._due.pop(token, None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for token, (deadline, action) in list(self._due.items()):
                    if deadline <= now:
                        del self._due[token]
                        action()
                self._wakes_at = min((deadline for deadline, _ in self._due.values()), default=now + 60.0)
                self._cond.wait(max(0.005, self._wakes_at - now))


_WATCHDOG = _Watchdog()


@contextmanager
def _deadline(conn: psycopg.Connection, seconds: float) -> Iterator[None]:
    """Shut the connection's socket down if the block has not finished within `seconds`: a read
    blocked on a silent server then returns, and psycopg raises OperationalError."""
    def cut() -> None:
        log.warning("store connection did not answer within %g s; closing it", seconds)
        try:
            with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    token = _WATCHDOG.arm(seconds, cut)
    try:
        yield
    finally:
        _WATCHDOG.disarm(token)  # never cut after the block ended: the connection may be someone else's
