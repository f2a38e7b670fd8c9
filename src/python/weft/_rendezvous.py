"""The unique id from torchrun-style environment variables (weft.Communicator.from_env).

Rank 0 makes the id and serves it on MASTER_PORT until every other rank has fetched it; the others
connect to MASTER_ADDR:MASTER_PORT, retrying until rank 0 listens. A request names the asking rank
and the world size, so a rank of another job (or a stray connection) is told apart and ignored.
Both sides stop at the deadline with an error saying who was missing.
"""

import os
import socket
import struct
import time

_MAGIC = b"WEFTUID1"
_REPLY = b"WEFTUIDR"  # not the request's magic, so a socket that reads its own request back fails
_REQUEST = struct.Struct("!8sii")  # magic, asking rank, world size
_BIND_RETRY_S = 5.0
_ID_BYTES = 128


def _env_int(name):
    value = os.environ.get(name)
    if value is None:
        raise RuntimeError(f"weft: from_env needs {name} in the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)")
    try:
        return int(value)
    except ValueError:
        raise RuntimeError(f"weft: {name}={value!r} is not an integer") from None


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def _serve(uid, nranks, port, deadline):
    """Rank 0: answers every rank 1..nranks-1 once (again if it asks again), then stops."""
    # A port just released (a peer's connection to itself, below) may refuse for a moment: retry a
    # few seconds, not the whole timeout, since a port another server holds will not come free.
    give_up = min(deadline, time.monotonic() + _BIND_RETRY_S)
    while True:
        try:
            server = socket.create_server(("", port), backlog=max(16, nranks))
            break
        except OSError as e:
            if time.monotonic() >= give_up:
                raise RuntimeError(
                    f"weft: from_env: rank 0 cannot listen on port {port} ({e}); another server (a "
                    "torch.distributed store?) may hold it: pass port= a free port, the same on every rank"
                ) from None
            time.sleep(0.05)
    waiting = set(range(1, nranks))
    with server:
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"weft: from_env: ranks {sorted(waiting)} did not fetch the unique id from rank 0 in time")
            server.settimeout(left)
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(max(0.1, min(5.0, deadline - time.monotonic())))
                try:
                    magic, rank, world = _REQUEST.unpack(_recv_exact(conn, _REQUEST.size))
                    if magic != _MAGIC or world != nranks or not 0 < rank < nranks:
                        continue  # not one of this job's ranks
                    conn.sendall(_REPLY + uid)
                    waiting.discard(rank)
                except (OSError, ConnectionError, struct.error):
                    continue  # that rank retries


def _fetch(rank, nranks, addr, port, deadline):
    """Ranks 1..: asks rank 0 until it answers or the deadline passes."""
    last = None
    while time.monotonic() < deadline:
        try:
            left = max(0.1, deadline - time.monotonic())
            with socket.create_connection((addr, port), timeout=min(left, 5.0)) as conn:
                if conn.getsockname() == conn.getpeername():
                    # TCP's self-connect: before rank 0 listens, a connection to a free local port
                    # can get that very port as its source and connect to itself. Drop it with a
                    # reset (no lingering close), so the port is free for rank 0 at once.
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    raise ConnectionError("connected to itself (rank 0 not listening yet)")
                conn.sendall(_REQUEST.pack(_MAGIC, rank, nranks))
                reply = _recv_exact(conn, len(_REPLY) + _ID_BYTES)
            if reply[: len(_REPLY)] == _REPLY:
                return reply[len(_REPLY) :]
            last = "a reply that is not Weft's"
        except (OSError, ConnectionError) as e:
            last = str(e)
        time.sleep(0.05)
    raise TimeoutError(f"weft: from_env: rank {rank} got no unique id from rank 0 at {addr}:{port} in time (last: {last})")


def env_unique_id(make_id, timeout, port=None):
    """(rank, world size, unique id) from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT."""
    rank = _env_int("RANK")
    nranks = _env_int("WORLD_SIZE")
    if not 0 <= rank < nranks:
        raise RuntimeError(f"weft: RANK={rank} is not within WORLD_SIZE={nranks}")
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = _env_int("MASTER_PORT") if port is None else int(port)
    deadline = time.monotonic() + float(timeout)
    if rank == 0:
        uid = make_id()
        if nranks > 1:
            _serve(uid, nranks, port, deadline)
        return rank, nranks, uid
    return rank, nranks, _fetch(rank, nranks, addr, port, deadline)
