"""The ring all-reduce's step schedule over DLCP: each step waits for what it needs, nothing more.

A ring all-reduce of N ranks is 2(N-1) dependent steps (reduce-scatter, then all-gather); step s+1
sends the chunk that step s received (and, in the reduce-scatter, added to). So the only thing a
step must wait for is the previous step's RECEIVE. The first version also waited for its own
SEND to be acknowledged (the right neighbour's DONE), which costs every step at least one more
one-way trip plus the receiver's completion on the far side, 2(N-1) times per bucket, and lets one
slow acknowledgement stall the whole ring (measured in ``ecmp-collision``, issue 10, H10b: see
docs/experiments-history.md, "The ring all-reduce in ecmp-collision"). Here the sends only have to be
acknowledged before the iteration's record is written (``finish_sends``), so their retransmissions
still count. Each step records the tensor id it received (``CommStats.step_tensor_id``), so the
steps of several buckets in flight (``overlap.allreduce_worker_udp``) stay attributable.

Reusing the chunk buffers while a send is unacknowledged is safe: ``packetize`` copies the
payload, so a later retransmission sends what was sent first, whatever the buffer holds by then.

A bucket's layer class (``bucket_need_positions``) is WHEN the next forward pass needs it: the share
of that pass's compute that runs before the bucket's first layer, not that layer's index. The
whole bucket is needed then (the forward pass waits for the reduced bucket, not per chunk), so
every chunk of it carries that class. By index, ResNet-50's second bucket (its first layer is
number 112 of 161, but only 26 % of the compute comes before it) got class 2 and sat in queue 1
under a PS job's classes 5-7 at a shared leaf (pcaps, docs/experiments-history.md, ecmp-collision).
With one bucket in flight (the default) the buckets are reduced 3, 2, 1, 0, so every bucket holds
up bucket 0, which the next pass needs first: each bucket carries the most urgent class waiting
behind it in its slot (priority inheritance, ``in_flight``; ``overlap.allreduce_worker_udp`` passes
its own). Its need-time class alone (7/5/3/1) put buckets 1-3 under another job's bulk at shared
leaves: in ``ecmp-collision`` 67 % of what left a port while ring packets waited > 50 ms was the PS
job's, and a chain is gated by its slowest part (pcaps, H10b session 7).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace

import numpy as np

from host_agent import protocol as P
from host_agent.collectives import CommStats, _pack
from host_agent.endpoint import Endpoint, SendHandle
from host_agent.policy import TagPolicy
from host_agent.receiver import RecvHandle

# A step's receive is posted this many steps early (ring_task): DATA of the next step that overtakes its OPEN
# (sprayed over another path) is held for the OPEN instead of dropped as a tensor nobody expects.
LOOKAHEAD = 1


def bucket_need_positions(layer_elements: Sequence[int], groups: Sequence[Sequence[int]],
                          in_flight: int | None = None) -> list[tuple[int, int]]:
    """Per bucket (``groups``: layer indices in model order), ``(position, out_of)`` for
    ``TagPolicy.layer_class``: the parameters before the bucket's first layer, out of all of them.

    That is the share of the next forward pass's compute done before the bucket is needed
    (``overlap.ComputeModel`` makes a layer's compute proportional to its parameters), so with
    ``front_first`` a bucket needed after 26 % of the pass gets class 7 - floor(8 * 0.26) = 5.

    ``in_flight``: the buckets are reduced as backprop completes them (the last bucket first), the
    k-th ready in slot k mod ``in_flight``, one after another per slot (``overlap.allreduce_worker_udp``).
    A bucket then holds up every later bucket of its slot, the front one included, so it inherits the
    most urgent position among them (priority inheritance): with one in flight the whole ring travels
    at its front bucket's class. Without it a back bucket, tagged low, waits under another job's
    front layers while the front bucket waits behind it (pcaps in ecmp-collision, H10b).
    ``overlap.allreduce_worker_udp`` passes its ``in_flight``. Measured in ecmp-collision (5 seeds,
    per-tensor ECMP, H10b session 7): the ring 0.94x -> 1.21x TCP cubic (significant), the PS job
    1.34x -> 1.12x (p99 0.85x TCP's, significant); with the per-flow hash of before, the PS's p99
    paid (1.24-1.35x TCP's, sessions 5 and 7). ``None``: need time alone.
    """
    total = int(sum(layer_elements))
    if total <= 0:
        raise ValueError("bucket_need_positions: the layers hold no parameters")
    before = np.concatenate([[0], np.cumsum(np.asarray(layer_elements, dtype=np.int64))])
    need = [int(before[g[0]]) for g in groups]
    if in_flight is not None:
        if in_flight < 1:
            raise ValueError(f"bucket_need_positions: in_flight {in_flight} must be >= 1")
        ready = list(reversed(range(len(groups))))
        inherited = list(need)
        for k, b in enumerate(ready):
            inherited[b] = min(need[x] for x in ready[k::in_flight])
        need = inherited
    return [(pos, total) for pos in need]


def ring_task(ep: Endpoint, rank: int, addrs: Sequence[tuple[str, int]], flat: np.ndarray, iteration: int,
              policy: TagPolicy, stats: CommStats, sends: list[SendHandle], *, mtu: int = 1500,
              tensor_id: Callable[[int], int] = lambda step: step, position: int | None = None,
              num_layers: int | None = None, wait_for_acks: bool = False) -> Generator[list, None, None]:
    """In-place ring all-reduce (sum) of the flat float32 ``flat`` as a task yielding handle lists.

    Rank r sends to ``addrs[(r + 1) % N]`` and receives from rank r-1 (matched by worker id).
    Each yield is the one receive the next step needs; the send handles go to ``sends`` (wait for
    them with ``finish_sends`` before reading ``stats``' send counters). ``tensor_id(step)`` names
    step 0..2N-3 on the wire; ``position``/``num_layers`` give the layer class of every step (default
    0 of 1: a tensor without layer order is needed whole, so all its steps carry one class, the
    front's; the step number used to be the class, so the all-gather that completes the tensor
    travelled lowest). The reduce-scatter uses ``policy`` (bounded loss); the all-gather sends
    parameters, all CRITICAL with loss bound 0, so every rank ends with the same values.
    ``wait_for_acks``: the first version's lockstep (each step also waits for its own send's DONE),
    kept only as the baseline of ``benchmarks/bench_ring_schedule.py``.
    """
    n = len(addrs)
    if n == 1:
        return
    bounds = np.linspace(0, flat.size, n + 1).astype(np.int64)
    chunk = [flat[bounds[i]:bounds[i + 1]] for i in range(n)]
    right, left = addrs[(rank + 1) % n], (rank - 1) % n
    gather_policy = replace(policy, loss_bound=0.0, pull_critical=True)
    tmp = [np.zeros(c.size, np.float32) for c in chunk]

    def pack(data: np.ndarray, step: int, pol: TagPolicy, kind: int) -> object:
        tid = tensor_id(step)
        pos = 0 if position is None else position
        return _pack(data, tid, pos, 1 if num_layers is None else num_layers, pol, ep, iteration, kind, mtu)

    # Every step's receive buffer, in step order: reduce-scatter step s receives chunk (r - s - 1) into tmp,
    # all-gather step s chunk (r - s) in place. A step's receive is posted LOOKAHEAD steps early: the left
    # neighbour may already send the next step's chunk while this one is still arriving, and under spraying
    # its DATA can overtake its OPEN (which keeps the tensor's one path); the receiver holds such DATA only for
    # a tensor someone expect()ed (Receiver._hold_early), else drops it (ecmp-collision pcaps, H10h). Early posting is safe: the chunk received at
    # step k is not read before step k + 1 (sends copy their payload).
    bufs = [tmp[(rank - s - 1) % n] for s in range(n - 1)] + [chunk[(rank - s) % n] for s in range(n - 1)]
    posted: dict[int, RecvHandle] = {}

    def expect(k: int) -> RecvHandle:
        for j in range(k, min(k + 1 + LOOKAHEAD, len(bufs))):
            if j not in posted:
                posted[j] = ep.expect(left, iteration, tensor_id(j), bufs[j])
        return posted[k]

    # reduce-scatter: step s sends chunk (r - s), receives chunk (r - s - 1) and adds it
    for s in range(n - 1):
        send_c, recv_c = (rank - s) % n, (rank - s - 1) % n
        r = expect(s)
        t0 = _start_step(stats, tensor_id(s), ep.send(pack(chunk[send_c], s, policy, P.KIND_GRADIENT), right), sends)
        yield [sends[-1], r] if wait_for_acks else [r]
        stats.step_recv_s.append(time.monotonic() - t0)
        chunk[recv_c] += tmp[recv_c]
        stats.add_recv(r)
    # all-gather: step s sends chunk (r + 1 - s), receives chunk (r - s) into place
    for s in range(n - 1):
        send_c, recv_c = (rank + 1 - s) % n, (rank - s) % n
        step = n - 1 + s
        r = expect(step)
        t0 = _start_step(stats, tensor_id(step), ep.send(pack(chunk[send_c], step, gather_policy, P.KIND_PARAMETER), right),
                         sends)
        yield [sends[-1], r] if wait_for_acks else [r]
        stats.step_recv_s.append(time.monotonic() - t0)
        stats.add_recv(r)


def _start_step(stats: CommStats, tid: int, h: SendHandle, sends: list[SendHandle]) -> float:
    """Record a step whose send ``h`` has just started; return the step's origin (``time.monotonic``).

    The origin is the send's own start (``tx.started``), not an instant before the chunk was packed:
    ``step_recv_s`` and ``step_ack_s`` (``finish_sends``) must be measured from the same instant.
    Packing the first step took up to 128 ms at load 10, so a receive measured from before the
    packing could read longer than an acknowledgement held until after it (the flaky
    ``test_ring_steps_wait_for_receives_not_for_acknowledgements``, H10b session 6)."""
    sends.append(h)
    t0 = h.tx.started
    stats.step_start_unix.append(time.time() - (time.monotonic() - t0))
    stats.step_tensor_id.append(tid)
    return t0


def finish_sends(sends: list[SendHandle], stats: CommStats) -> None:
    """Count the (acknowledged) ``sends`` into ``stats`` and forget them."""
    for h in sends:
        stats.add_send(h)
        if h.tx.finished is not None:
            stats.step_ack_s.append(h.tx.finished - h.tx.started)
    sends.clear()
