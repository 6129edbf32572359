"""The switch's runtime control endpoint: ``p4sim ctl`` talks to it (BMv2's runtime CLI, small).

Protocol (documented in docs/p4sim.md): TCP, one JSON object per line each way. A request is
``{"cmd": NAME, "args": {...}}``; the reply is ``{"result": ...}`` or ``{"error": "one line"}``.
Commands: ``set_queue_depth {depth, port?, prio?}``, ``set_queue_rate {rate_pps, port?, prio?}``,
``set_port_rate {port, bits}``, ``show_queues``, ``stats``.

One thread serves every connection with ``selectors``; ``stop`` closes them all and joins it.
The endpoint is unauthenticated, so it binds to loopback unless told otherwise.
"""

from __future__ import annotations

import json
import logging
import selectors
import socket
import threading
from typing import Any

from p4sim.errors import UserError

log = logging.getLogger(__name__)
MAX_LINE = 64 * 1024
MAX_INT = (1 << 63) - 1
LOCK_TIMEOUT = 5.0      # seconds a command waits for the packet thread to let go of the device
# argument names of each command (anything else is refused, not ignored)
COMMAND_ARGS: dict[str, tuple[str, ...]] = {
    "set_queue_depth": ("depth", "port", "prio"),
    "set_queue_rate": ("rate_pps", "port", "prio"),
    "set_port_rate": ("port", "bits"),
    "show_queues": (),
    "stats": (),
}


class CtlError(UserError):
    """A bad control request or an unreachable control endpoint."""


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port_s = text.rpartition(":")
    if not sep or not port_s.isdigit() or not 0 <= int(port_s) < 65536:
        raise CtlError(f"{what} {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9090")
    return host.strip("[]") or "127.0.0.1", int(port_s)


def _opt_int(args: dict, key: str, required: bool = False) -> int | None:
    value = args.get(key)
    if value is None:
        if required:
            raise CtlError(f"missing argument {key!r}")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CtlError(f"argument {key!r}: {value!r} is not an integer")
    if not 0 <= value <= MAX_INT:
        raise CtlError(f"argument {key!r}: {value} is not in 0..{MAX_INT}")
    return value


class CtlServer:
    """Serves the control protocol for one ``SwitchDevice``."""

    def __init__(self, device, address: str = "127.0.0.1:9090") -> None:
        self.device = device
        host, port = parse_host_port(address, "--ctl-addr")
        try:
            self._listener = socket.create_server((host, port), reuse_port=False)
        except OSError as err:
            raise CtlError(f"--ctl-addr {address}: cannot listen: {err.strerror}") from err
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self.address = f"{host}:{self.port}"
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"{device.name}-ctl", daemon=True)

    def start(self) -> int:
        self._thread.start()
        return self.port

    def stop(self) -> None:
        self._stopping = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._thread.is_alive():
            self._thread.join()
        for key in list(self._sel.get_map().values()):
            key.fileobj.close()
        self._sel.close()
        self._wake_w.close()

    # ---- serving --------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping:
            for key, _ in self._sel.select(timeout=1.0):
                if key.data == "wake":
                    return
                if key.data is None:
                    self._accept()
                else:
                    self._read(key.fileobj, key.data)

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        conn.setblocking(True)
        conn.settimeout(5.0)
        self._sel.register(conn, selectors.EVENT_READ, bytearray())

    def _close(self, conn: socket.socket) -> None:
        self._sel.unregister(conn)
        conn.close()

    def _read(self, conn: socket.socket, buf: bytearray) -> None:
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self._close(conn)
            return
        buf += chunk
        while (nl := buf.find(b"\n")) >= 0:
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            reply = self._handle_line(line)
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                self._close(conn)
                return
        if len(buf) > MAX_LINE:
            self._close(conn)

    def _handle_line(self, line: bytes) -> dict:
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
                raise CtlError('request must be {"cmd": NAME, "args": {...}}')
            args = request.get("args")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise CtlError("args must be an object")
            return {"result": self.execute(request["cmd"], args)}
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            return {"error": f"request is not JSON: {err}"}
        except RecursionError:
            return {"error": "request is not JSON: nested too deeply"}
        except UserError as err:
            return {"error": str(err)}
        except Exception as err:   # noqa: BLE001 - a bug costs one reply, not the endpoint
            log.exception("ctl request failed")
            return {"error": f"internal error: {type(err).__name__}: {err}"}

    def execute(self, cmd: str, args: dict) -> Any:
        """Run one command against the device (also usable in-process)."""
        dev = self.device
        tm = dev.tm
        allowed = COMMAND_ARGS.get(cmd)
        if allowed is None:
            raise CtlError(f"unknown command {cmd!r} ({', '.join(COMMAND_ARGS)})")
        unknown = sorted(set(args) - set(allowed))
        if unknown:
            raise CtlError(f"unknown argument {unknown[0]!r} for {cmd} ({', '.join(allowed) or 'none'})")
        guard = dev.control(LOCK_TIMEOUT) if hasattr(dev, "control") else dev.lock
        try:
            guard.__enter__()
        except TimeoutError:
            raise CtlError(f"{cmd}: the switch did not answer within {LOCK_TIMEOUT:.0f} s (its packet thread "
                           "holds the device)") from None
        try:
            if cmd == "set_queue_depth":
                tm.set_queue_depth(_opt_int(args, "depth", True), _opt_int(args, "port"), _opt_int(args, "prio"))
            elif cmd == "set_queue_rate":
                tm.set_queue_rate(_opt_int(args, "rate_pps", True), _opt_int(args, "port"),
                                  _opt_int(args, "prio"))
            elif cmd == "set_port_rate":
                tm.set_port_rate(_opt_int(args, "port"), _opt_int(args, "bits", True))
            elif cmd == "show_queues":
                return tm.snapshot()
            elif cmd == "stats":
                return dev.stats()
        finally:
            guard.__exit__(None, None, None)
        log.info("[%s] ctl %s %s", dev.name, cmd, args)
        return None
