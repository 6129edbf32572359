"""Helpers shared by host-agent tests (a uniquely named module: several test dirs have a conftest)."""

from __future__ import annotations

import threading

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
