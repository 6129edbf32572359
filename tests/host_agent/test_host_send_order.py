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


def _send_two(by_class: bool) -> tuple[dict[str, float], list[tuple[int, int]]]:
    """A 300-packet class-0 tensor, then (20 ms later) a 20-packet class-7 one: when each is DONE, and
    the packets each had sent after every turn of the send loop from the class-7 tensor's send() on."""
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
    turns: list[tuple[int, int]] = []
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
        turns.append((low.tx.stats.packets, high.tx.stats.packets))
        deadline = t0 + 10
        while not (low.done and high.done) and time.monotonic() < deadline:
            tx.poll(0.002)
            turns.append((low.tx.stats.packets, high.tx.stats.packets))
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
    return done, turns


# The order is asserted in packets, which a loaded machine cannot change: each turn of the loop sends a
# tensor's packets until the shared pacer refuses one, and a later tensor to the same receiver waits for
# the next turn then (endpoint._pump). The DONE times (measured: about 0.05 s against 0.3 s) follow the
# packets' order; on a starved machine both DONEs can be read in one turn, so only their order is asserted.

def test_a_higher_class_tensor_overtakes_the_rest_of_a_lower_one():
    done, turns = _send_two(by_class=True)
    low_at_send = turns[0][0]
    assert low_at_send < 300 - 20                    # the 20 ms start left most of the low tensor to send
    # not one low-class packet left while the high-class tensor had packets to send
    behind = [low - low_at_send for low, high in turns if high < 20]
    assert max(behind) == 0, f"low-class packets sent before the high-class tensor's last: {max(behind)} ({done})"
    assert done["high"] <= done["low"], done          # its DONE left the receiver first (one socket, in order)


def test_in_send_order_the_higher_class_waits_for_the_lower_one():
    done, turns = _send_two(by_class=False)
    # not one high-class packet left while the low-class tensor (sent first) had packets to send
    ahead = [high for low, high in turns if low < 300]
    assert max(ahead) == 0, f"high-class packets sent before the low-class tensor's last: {max(ahead)} ({done})"


def test_send_order_from_the_environment(monkeypatch):
    monkeypatch.setenv("DLCP_SEND_BY_CLASS", "1")
    assert E.send_by_class() is True
    monkeypatch.setenv("DLCP_SEND_BY_CLASS", "0")
    assert E.send_by_class() is False
    monkeypatch.setenv("DLCP_SEND_BY_CLASS", "yes")
    with pytest.raises(UserError, match="DLCP_SEND_BY_CLASS"):
        E.send_by_class()
