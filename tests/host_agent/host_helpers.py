"""Helpers shared by host-agent tests (a uniquely named module: several test dirs have a conftest)."""

from __future__ import annotations

import threading

from host_agent import cli
from host_agent.endpoint import Endpoint


def run_both(sender: Endpoint, send_handles: list, receiver: Endpoint, recv_handles: list,
             timeout: float = 30.0) -> None:
    """Drive the receiver in a thread and the sender here until both sides are done."""
    err: list[BaseException] = []
    stop = threading.Event()

    def rx() -> None:
        try:
            receiver.run(recv_handles, timeout=timeout)
            # keep answering late probes until the sender is done
            while not stop.is_set():
                receiver.poll(0.005)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            err.append(exc)

    t = threading.Thread(target=rx, daemon=True)
    t.start()
    try:
        sender.run(send_handles, timeout=timeout)
    finally:
        stop.set()
        t.join(timeout + 5)
    if err:
        raise err[0]


def agent_switch(monkeypatch, env_name: str, env: str | None, argv: list[str], attr: str) -> bool:
    """The value of EndpointConfig ``attr`` in the endpoint dlcp-agent makes from ``recv`` ``argv``, with the
    environment variable ``env_name`` set to ``env`` (None: unset)."""
    if env is None:
        monkeypatch.delenv(env_name, raising=False)
    else:
        monkeypatch.setenv(env_name, env)
    args = cli.build_parser().parse_args(["recv", "--bind", "127.0.0.1:0", *argv])
    ep = cli.make_endpoint(args, 0)
    try:
        return getattr(ep.cfg, attr)
    finally:
        ep.sock.close()
