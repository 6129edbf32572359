"""The send loop's order among tensors to one receiver (host_agent/endpoint.py, ``send_by_class``).

Real endpoints on loopback; the sender is paced (AIMD pacer at a fixed initial rate), so tensors to
the receiver compete for its rate the way they compete for a grant and window in the emulation.
"""

import threading
import time

import numpy as np
import pytest

from host_agent import endpoint as E
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.errors import UserError
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.ratecontrol import RateConfig

RATE = 1.5e6           # bytes/s: 300 packets of 1.5 kB take about 0.3 s


def _done_times(by_class: bool) -> dict[str, float]:
    """A 300-packet class-0 tensor, then (20 ms later) a 20-packet class-7 one: when each is DONE."""
    rx = Endpoint(EndpointConfig(job_id=3, worker_id=9))
    tx = Endpoint(EndpointConfig(job_id=3, worker_id=1, rate=RateConfig(initial_rate=RATE, burst=16 * 1024)))
    tx.send_by_class = by_class
    policy = TagPolicy(loss_bound=0.0)
    big = np.arange(300 * 362, dtype=np.float32)
    small = np.ones(20 * 362, np.float32)
    outs = [np.zeros_like(big), np.zeros_like(small)]
    recv = [rx.expect(1, 0, 1, outs[0]), rx.expect(1, 0, 2, outs[1])]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            rx.poll(0.002)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    done: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        low = tx.send(packetize(big, tensor_id=1, policy=policy, position=7, num_layers=8, job_id=3, worker_id=1),
                      rx.address)
        assert low.tx.pt.layer_class == 0
        end = t0 + 0.02
        while time.monotonic() < end:
            tx.poll(0.002)
        high = tx.send(packetize(small, tensor_id=2, policy=policy, position=0, num_layers=8, job_id=3,
                                 worker_id=1), rx.address)
        assert high.tx.pt.layer_class == 7
        deadline = t0 + 10
        while not (low.done and high.done) and time.monotonic() < deadline:
            tx.poll(0.002)
            for name, h in (("low", low), ("high", high)):
                if h.done and name not in done:
                    done[name] = time.monotonic() - t0
    finally:
        stop.set()
        t.join(5)
        tx.close()
        rx.close()
    assert all(h.done for h in recv)
    np.testing.assert_array_equal(outs[0], big)
    np.testing.assert_array_equal(outs[1], small)
    return done


def test_a_higher_class_tensor_overtakes_the_rest_of_a_lower_one():
    done = _done_times(by_class=True)
    assert done["high"] < 0.5 * done["low"]          # measured: about 0.05 s against 0.3 s


def test_in_send_order_the_higher_class_waits_for_the_lower_one():
    done = _done_times(by_class=False)
    assert done["high"] > done["low"] - 0.05         # behind the whole 300-packet tensor


def test_send_order_from_the_environment(monkeypatch):
    monkeypatch.setenv("DLCP_SEND_BY_CLASS", "1")
    assert E.send_by_class() is True
    monkeypatch.setenv("DLCP_SEND_BY_CLASS", "0")
    assert E.send_by_class() is False
    monkeypatch.setenv("DLCP_SEND_BY_CLASS", "yes")
    with pytest.raises(UserError, match="DLCP_SEND_BY_CLASS"):
        E.send_by_class()
