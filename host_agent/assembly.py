"""Receiver side of one tensor: place payloads, track the received bitmap, decide completion.

Each DATA payload is written straight to its place in the destination array (a byte view of the
caller's NumPy array) after the header has been checked against the tensor's descriptor, so hostile
input (wrong dtype, bad length, offsets beyond or inside a packet, duplicates) is dropped and
counted and never written out of bounds. The tensor completes when every CRITICAL packet and at
least ceil((1 - p) * non-critical) of the rest have arrived; on completion missing gradient
elements are zero-filled (counted), missing parameter elements keep their previous value.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from host_agent import protocol as P

NUMPY_OF_DTYPE = {P.DTYPE_FLOAT32: np.float32, P.DTYPE_FLOAT16: np.float16,
                  P.DTYPE_BFLOAT16: np.uint16, P.DTYPE_INT8: np.int8}


@dataclass
class ReceiveStats:
    """Final accounting of one received tensor (also carried back to the sender in DONE)."""

    n_packets: int = 0
    received: int = 0
    duplicates: int = 0
    zero_filled_packets: int = 0
    zero_filled_elements: int = 0
    missing_critical: int = 0
    ce_marks: int = 0


class TensorAssembly:
    """Reassembly state of one (job, sender, tensor) for one iteration."""

    def __init__(self, *, job_id: int, worker_id: int, iteration: int, tensor_id: int, dtype: int,
                 desc: P.TensorDescriptor, out: np.ndarray, loss_bound: float | None = None,
                 deadline: float | None = None) -> None:
        if out.dtype != NUMPY_OF_DTYPE[dtype] or out.size != desc.n_elements:
            raise ValueError("destination array does not match the tensor descriptor")
        self.job_id, self.worker_id, self.iteration, self.tensor_id = job_id, worker_id, iteration, tensor_id
        self.dtype = dtype
        self.esize = P.elem_size(dtype)
        self.desc = desc
        self.out = out
        self._bytes = out.reshape(-1).view(np.uint8)
        self._mv = memoryview(self._bytes)
        self._recv = bytearray(desc.n_packets)                       # fast per-packet access
        self.received = np.frombuffer(self._recv, dtype=bool)         # the same bytes, for NumPy
        self.epp = desc.elems_per_packet
        self.n_packets = desc.n_packets
        self.n_received = 0
        self.critical_received = 0
        p = desc.loss_bound_ppm / P.LOSS_BOUND_SCALE
        if loss_bound is not None:
            p = min(p, loss_bound)
        self.loss_bound = p
        noncritical = desc.n_packets - desc.n_critical
        self.noncritical_needed = math.ceil((1.0 - p) * noncritical - 1e-9)
        self.deadline = deadline
        self.duplicates = 0
        # packets a BITMAP reported missing (asked for again); one arriving twice = a spurious
        # retransmission (the first copy was only late, not lost)
        self._requested = bytearray(desc.n_packets)
        self.spurious = 0
        self.ce_marks = 0
        self.ce_echoed = 0
        self.complete = False
        self.probed = False
        # the first transmission's LAST packet arrived: an implicit PROBE (EndpointConfig.last_as_probe)
        self.last_probed = False
        self.bitmap_round = -1         # the last probe round answered with a BITMAP
        # monotonic time of the last accepted DATA; until the first one, when the tensor was
        # announced (a PROBE that overtook every DATA packet is held from there)
        self.last_data = time.monotonic()
        self._any_data = False
        self.retx_seen = False         # a retransmission arrived (a repair round is under way)
        self.gap = 0.0                 # smoothed DATA inter-arrival time (s)
        self._arrival = np.zeros(desc.n_packets)   # when each packet arrived (reordering delay)
        self.held_probe = 0            # round of a PROBE held back until DATA goes quiet
        self.stats: ReceiveStats | None = None
        self.last_epp_count = desc.n_elements - (desc.n_packets - 1) * desc.elems_per_packet

    # -- data path -----------------------------------------------------------------------------
    def accept(self, dtype: int, flags: int, count: int, offset: int, payload: memoryview,
               ce: bool = False, seq: int = 0) -> str | None:
        """Place one DATA payload; returns a drop reason or None when written.

        ``seq`` matters only on retransmissions: its low bit says whether the packet counts as
        critical (``P.counts_as_critical``), since needed retransmissions are all sent CRITICAL.
        """
        if dtype != self.dtype:
            return "bad_dtype"
        nbytes = len(payload)
        if nbytes != count * self.esize:
            return "bad_length"
        index, rem = divmod(offset, self.epp)
        if rem or index >= self.n_packets:
            return "bad_offset"
        if count != (self.epp if index < self.n_packets - 1 else self.last_epp_count):
            return "bad_count"
        if self._recv[index]:
            self.duplicates += 1
            if self._requested[index]:
                self.spurious += 1
            return "duplicate"
        if self.complete:
            return "late"
        start = offset * self.esize
        self._mv[start:start + nbytes] = payload
        self._recv[index] = 1
        self.n_received += 1
        if P.counts_as_critical(flags, seq):
            self.critical_received += 1
        if ce:
            self.ce_marks += 1
        return None

    def accept_run(self, dtype: int, count: int, first_offset: int, payload: np.ndarray, n_critical: int,
                   ce: bool) -> bool:
        """Place a run of consecutive full DATA packets (a GRO batch) with one copy.

        ``payload`` is (k, count * elem size) uint8, packet j having offset first_offset + j*epp.
        All-or-nothing: False (nothing changed) when the run needs the per-packet path (wrong
        dtype or count, bad offset, touches the short last packet, duplicate, completed tensor).
        """
        epp = self.epp
        k = payload.shape[0]
        if self.complete or dtype != self.dtype or count != epp or payload.shape[1] != epp * self.esize:
            return False
        first, rem = divmod(first_offset, epp)
        limit = self.desc.n_elements // epp          # packets with the full count
        if rem or first + k > limit or self.received[first:first + k].any():
            return False
        pb = epp * self.esize
        self._bytes[first * pb:(first + k) * pb].reshape(k, pb)[:] = payload
        self.received[first:first + k] = True
        self.n_received += k
        self.critical_received += n_critical
        if ce:
            self.ce_marks += k
        return True

    def note_arrival(self, now: float, first: int, k: int = 1, first_transmission: bool = True) -> None:
        """Record that packets first..first+k-1 arrived at ``now``.

        Only first transmissions feed the inter-arrival EWMA (the pause before a retransmit round
        is a round trip, not the path's spacing).
        """
        if first_transmission and self._any_data:
            sample = now - self.last_data
            self.gap = sample if self.gap == 0.0 else self.gap + 0.125 * (sample - self.gap)
        self.last_data = now
        self._any_data = True
        self._arrival[first:first + k] = now
        if not first_transmission:
            self.retx_seen = True

    @property
    def last_seen(self) -> bool:
        """The tensor's last packet (LAST, sent last in the first transmission) has arrived."""
        return bool(self._recv[self.n_packets - 1])

    def reorder_delay(self, index: int, now: float) -> float:
        """How late packet ``index`` is behind the next one, which was sent after it (0: in order)."""
        nxt = index + 1
        if nxt < self.n_packets and self._recv[nxt]:
            return now - float(self._arrival[nxt])
        return 0.0

    # -- completion ----------------------------------------------------------------------------
    @property
    def all_received(self) -> bool:
        return self.n_received == self.desc.n_packets

    def deficit(self) -> int:
        """Non-critical packets still needed to meet the loss bound."""
        return max(0, self.noncritical_needed - (self.n_received - self.critical_received))

    def missing_critical(self) -> int:
        return max(0, self.desc.n_critical - self.critical_received)

    def bound_met(self) -> bool:
        return self.missing_critical() == 0 and self.deficit() == 0

    def finish(self) -> ReceiveStats:
        """Mark complete; zero-fill missing gradient elements (parameters keep previous values)."""
        if self.complete:
            assert self.stats is not None
            return self.stats
        self.complete = True
        missing = np.flatnonzero(~self.received)
        zero_elems = 0
        if missing.size and self.desc.kind == P.KIND_GRADIENT:
            epp = self.desc.elems_per_packet
            flat = self.out.reshape(-1)
            if missing.size * 8 < self.desc.n_packets:
                for i in missing.tolist():
                    flat[i * epp:(i + 1) * epp] = 0
            else:
                mask = np.repeat(~self.received, epp)[: self.desc.n_elements]
                flat[mask] = 0
            zero_elems = int(missing.size) * epp
            if missing[-1] == self.desc.n_packets - 1:
                zero_elems -= epp - self.last_epp_count
        self.stats = ReceiveStats(
            n_packets=self.desc.n_packets, received=self.n_received, duplicates=self.duplicates,
            zero_filled_packets=int(missing.size) if self.desc.kind == P.KIND_GRADIENT else 0,
            zero_filled_elements=zero_elems, missing_critical=self.missing_critical(),
            ce_marks=self.ce_marks)
        return self.stats

    def drop_buffer(self) -> None:
        """After completion: let go of the data (late packets are refused before any write)."""
        assert self.complete
        self.out = np.empty(0, self.out.dtype)
        self._bytes = self.out.view(np.uint8)
        self._mv = memoryview(self._bytes)

    def bitmap_chunks(self, round_: int) -> list[bytes]:
        """BITMAP bodies for this probe round: received bits, LSB-first, cut into chunks."""
        np.frombuffer(self._requested, dtype=bool)[:] |= ~self.received
        bits = np.packbits(self.received, bitorder="little")
        step = P.BITMAP_CHUNK_BITS
        n = self.desc.n_packets
        n_chunks = max(1, -(-n // step))
        out = []
        for c in range(n_chunks):
            first = c * step
            nbits = min(step, n - first)
            body = P.BITMAP_HEAD.pack(round_, c, n_chunks, first, nbits, self.deficit(),
                                      self.missing_critical())
            out.append(body + bits[first // 8:(first + nbits + 7) // 8].tobytes())
        return out

    def done_body(self) -> bytes:
        s = self.finish()
        return P.DONE_BODY.pack(s.received, s.zero_filled_packets, s.zero_filled_elements, s.duplicates,
                                s.ce_marks)
