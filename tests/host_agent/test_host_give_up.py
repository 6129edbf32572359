"""give_up_after counts the receiver's silence from the end of a transmission (real sockets).

A receiver answers PROBEs (BITMAP, DONE), not DATA; one without a link rate sends nothing at all while the
DATA comes (no GRANT, no ACK). The sender's clock of ``give_up_after`` s without an answer ran from the
tensor's start, so a first transmission paced for longer than that (a large tensor at a small grant, or a
descheduled sender on a loaded machine: test_host_pacing_pairs failed that way at nice 19 beside Mininet
runs) gave up the moment it sent its PROBE: "no answer ... in 5.0s", before the PROBE was even answered.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_helpers import run_both

from host_agent.errors import TransportError
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy

RATE = 2.5e5                  # bytes/s: 200 packets take ~1.2 s, more than GIVE_UP
GIVE_UP = 0.5
POLICY = TagPolicy(critical_share=1.0, loss_bound=0.0)


def _tensor(tid: int, packets: int):
    grad = np.arange(362 * packets, dtype=np.float32) + tid
    return grad, packetize(grad, tensor_id=tid, policy=POLICY, job_id=1, worker_id=0, iteration=0)


@pytest.mark.timeout(60)
def test_a_transmission_longer_than_give_up_after_still_completes(endpoints):
    rx = endpoints(job_id=1)                       # no link rate: silent while the DATA comes
    tx = endpoints(job_id=1, worker_id=0, link_rate=RATE, offload="off", give_up_after=GIVE_UP)
    for tid, packets in ((1, 1), (2, 200)):        # first contact, then the long one
        grad, pt = _tensor(tid, packets)
        out = np.zeros_like(grad)
        r = rx.expect(0, 0, tid, out)
        h = tx.send(pt, rx.address)
        run_both(tx, [h], rx, [r], timeout=30)
        assert h.done and not h.failed and np.array_equal(out, grad)
    assert h.tx.tail_sent - h.tx.started > GIVE_UP   # the DATA took longer than the sender's patience


@pytest.mark.timeout(60)
def test_a_receiver_that_never_answers_is_still_given_up_on(endpoints):
    """Give-up itself is unchanged: a receiver that is gone fails the tensor after the PROBE went unanswered."""
    rx = endpoints(job_id=1)
    tx = endpoints(job_id=1, worker_id=0, link_rate=RATE, offload="off", give_up_after=GIVE_UP)
    grad, pt = _tensor(1, 1)
    out = np.zeros_like(grad)
    r = rx.expect(0, 0, 1, out)
    h = tx.send(pt, rx.address)
    run_both(tx, [h], rx, [r], timeout=30)
    gone = rx.address
    rx.sock.close()                                # the receiver is gone
    _grad, pt = _tensor(2, 20)
    h = tx.send(pt, gone)
    with pytest.raises(TransportError, match="no answer from"):
        tx.run([h], timeout=30)
    assert h.failed and h.tx.tail_sent is not None
