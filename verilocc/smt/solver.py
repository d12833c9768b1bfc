"""The one narrow layer that talks to SMT solvers.

Every query is SMT-LIB 2 text (the same text a certificate stores), decided with a fixed
seed, a deterministic resource limit and a wall-clock timeout. The answer is Sat, Unsat or
Unknown; Unknown is its own answer and never counts as either of the others. A model is
turned into plain Python integers before it leaves this module.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

DEFAULT_TIMEOUT_S = 60.0
# z3's resource counter is deterministic across machines and always honoured, unlike its
# wall-clock timeout (seen not to stop some queries); it is the hard limit.
DEFAULT_RLIMIT = 200_000_000
DEFAULT_SEED = 0


class Answer(enum.Enum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


@dataclass
class SolverOutcome:
    """A solver's answer to one query, with its time (and, for SAT, the model when asked)."""

    answer: Answer
    solver: str
    seconds: float
    reason: str = ""
    model: dict[str, int] = field(default_factory=dict)


def z3_version() -> str:
    import z3

    return str(z3.get_version_string())


def check_z3(
    smtlib: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rlimit: int = DEFAULT_RLIMIT,
    seed: int = DEFAULT_SEED,
    want_model: bool = False,
) -> SolverOutcome:
    """Decide SMT-LIB text with z3: in the solver process when one runs (`solver_process`),
    else here."""
    if _SERVER is not None:
        outcome = _ask_server(_SERVER, {"smtlib": smtlib, "timeout_s": timeout_s, "rlimit": rlimit, "seed": seed,
                                        "want_model": want_model})
        if outcome is not None:
            return outcome
    return _check_z3_here(smtlib, timeout_s=timeout_s, rlimit=rlimit, seed=seed, want_model=want_model)


def _check_z3_here(
    smtlib: str, *, timeout_s: float, rlimit: int, seed: int, want_model: bool, ctx: Any = None
) -> SolverOutcome:
    """`check_z3` in this process, in `ctx` (a new z3 context, not used before) or a new one."""
    import z3

    start = time.perf_counter()
    if ctx is None:
        ctx = z3.Context()
    try:
        assertions = z3.parse_smt2_string(smtlib, ctx=ctx)
    except z3.Z3Exception as e:
        return SolverOutcome(Answer.UNKNOWN, "z3", time.perf_counter() - start, f"z3 rejected the query: {e}")
    s = z3.Solver(ctx=ctx)
    s.set("random_seed", seed)
    s.set("timeout", max(1, int(timeout_s * 1000)))
    s.set("rlimit", rlimit)
    s.add(assertions)
    try:
        r = s.check()
    except z3.Z3Exception as e:  # interrupted or out of resources
        return SolverOutcome(Answer.UNKNOWN, "z3", time.perf_counter() - start, str(e))
    elapsed = time.perf_counter() - start
    if r == z3.sat:
        model: dict[str, int] = {}
        if want_model:
            m = s.model()
            for d in m.decls():
                v = m[d]
                if z3.is_bv_value(v) or z3.is_int_value(v):
                    model[d.name()] = v.as_long()  # type: ignore[union-attr]
                elif z3.is_true(v) or z3.is_false(v):
                    model[d.name()] = int(z3.is_true(v))
        return SolverOutcome(Answer.SAT, "z3", elapsed, model=model)
    if r == z3.unsat:
        return SolverOutcome(Answer.UNSAT, "z3", elapsed)
    return SolverOutcome(Answer.UNKNOWN, "z3", elapsed, s.reason_unknown())


# --- a solver process, started before the caller needs it ---------------------------------
# Importing z3 takes a short command (`verilocc verify` on a small kernel) about a fifth of its
# time. `solver_process` forks, at the command's start, a process that imports z3 while the
# command imports and parses, and then decides `check_z3`'s queries, one connection each, for
# this process and the processes it forks (layer 1 of a large function runs in one). A query
# is decided there exactly as here (`_check_z3_here`: a new context, made while the process
# waits and used for that query alone, the same seed and limits), so the answers are the
# same; if the process cannot answer, the query runs here.

_SERVER: str | None = None  # the solver process's socket address, when one runs


def processors() -> int:
    """The processors this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def forking_pays() -> bool:
    """Whether a process forked now can run beside this one: fork is there, so is a second
    processor, and no other thread runs (a child would inherit the locks it holds as held).
    The solver process and layer 1's child (`verilocc.verify.Layer1`) are forked only then."""
    return hasattr(os, "fork") and processors() > 1 and threading.active_count() == 1


@contextlib.contextmanager
def solver_process() -> Iterator[None]:
    """Within the block, `check_z3` asks a solver process that imports z3 meanwhile, where
    that is possible and pays: Linux (its abstract socket names), more than one processor,
    no other thread (a fork copies no thread), and no solver process already."""
    global _SERVER
    if _SERVER is not None or sys.platform != "linux" or not forking_pays():
        yield
        return
    import socket

    address = f"\0verilocc-z3-{os.getpid()}-{os.urandom(8).hex()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    alive_r, alive_w = os.pipe()  # the solver process ends when every writer has closed
    try:
        listener.bind(address)
        listener.listen(8)
        pid = os.fork()
    except OSError:
        listener.close()
        os.close(alive_r)
        os.close(alive_w)
        yield
        return
    if pid == 0:
        code = 1
        try:
            os.close(alive_w)
            _serve(listener, alive_r)
            code = 0
        finally:
            os._exit(code)
    listener.close()
    os.close(alive_r)
    _SERVER = address
    try:
        yield
    finally:
        _SERVER = None
        os.close(alive_w)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # a query no one waits for any more need not finish
            os.waitpid(pid, 0)


def _serve(listener: socket.socket, alive: int) -> None:
    """The solver process: import z3, then answer one query per connection until the
    processes that may ask are gone. It answers only processes of its own user (an abstract
    socket name is visible to every process on the machine), and reads queries as JSON: a
    connection can ask it to decide a formula, nothing else."""
    import select
    import socket
    import struct

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle
    import z3  # imported now, while the command starts

    uid = os.getuid()
    while True:
        ctx = z3.Context()  # made while no one waits (it takes a small query's time); used once
        ready, _, _ = select.select([listener.fileno(), alive], [], [])
        if alive in ready:
            return
        conn, _ = listener.accept()
        with conn:
            try:
                _, peer_uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                     struct.calcsize("3i")))
                if peer_uid != uid:
                    continue
                q = json.loads(_receive(conn))
                outcome = _check_z3_here(str(q["smtlib"]), timeout_s=float(q["timeout_s"]), rlimit=int(q["rlimit"]),
                                         seed=int(q["seed"]), want_model=bool(q["want_model"]), ctx=ctx)
                _send(conn, json.dumps({"answer": outcome.answer.value, "solver": outcome.solver,
                                        "seconds": outcome.seconds, "reason": outcome.reason,
                                        "model": outcome.model}).encode())
            except (OSError, EOFError, ValueError, KeyError, TypeError):
                continue  # the asker went away, or sent nothing whole: it decides its query itself


def _ask_server(address: str, query: dict[str, Any]) -> SolverOutcome | None:
    """The solver process's outcome of a query; None when it gives none."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(address)
            _send(conn, json.dumps(query).encode())
            got = json.loads(_receive(conn))
        return SolverOutcome(Answer(got["answer"]), str(got["solver"]), float(got["seconds"]), str(got["reason"]),
                       {str(k): int(v) for k, v in got["model"].items()})
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _send(conn: socket.socket, data: bytes) -> None:
    conn.sendall(len(data).to_bytes(8, "little") + data)


def _receive(conn: socket.socket) -> bytes:
    size = int.from_bytes(_receive_exactly(conn, 8), "little")
    return _receive_exactly(conn, size)


def _receive_exactly(conn: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the connection closed early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def check_z3_terms(
    z3: Any,
    ctx: Any,
    assertions: list[Any],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rlimit: int = DEFAULT_RLIMIT,
    seed: int = DEFAULT_SEED,
) -> tuple[SolverOutcome, Callable[[Any], int | bool | None] | None]:
    """Decide z3 terms built in `ctx` (by a layer that constructs its query as terms, not text)
    under the same seed and limits as `check_z3`. On Sat, also a valuation of the model that
    turns any term into a plain Python value (bit-vector -> int, Boolean -> bool, else None)."""
    start = time.perf_counter()
    s = z3.Solver(ctx=ctx)
    s.set("random_seed", seed)
    s.set("timeout", max(1, int(timeout_s * 1000)))
    s.set("rlimit", rlimit)
    s.add(assertions)
    r = s.check()
    elapsed = time.perf_counter() - start
    if r == z3.unsat:
        return SolverOutcome(Answer.UNSAT, "z3", elapsed), None
    if r != z3.sat:
        return SolverOutcome(Answer.UNKNOWN, "z3", elapsed, s.reason_unknown()), None
    model = s.model()

    def value(t: Any) -> int | bool | None:
        v = model.eval(t, model_completion=True)
        return v.as_long() if z3.is_bv_value(v) else z3.is_true(v) if z3.is_bool(v) else None

    return SolverOutcome(Answer.SAT, "z3", elapsed), value
