"""The DLCP wire format: the single Python source of truth.

Every constant, field width, flag bit and struct layout of the DLCP header lives here, exactly as
fixed in ``docs/contracts-dlcp.md`` (and mirrored in ``p4src/include/``; a test compares the two).
It also defines the host-to-host control message bodies (OPEN, PROBE, BITMAP, DONE, ECN echo) that
the transport exchanges, the per-transfer token that DATA carries in ``seq``, and a scapy ``Packet`` subclass bound to UDP destination port 9290 so
captures dissect with scapy and tests build real packets with it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from scapy.fields import BitEnumField, BitField, FlagsField, IntField, ShortField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

# --- transport binding -------------------------------------------------------------------------
DLCP_UDP_PORT = 9290
"""Default UDP destination port carrying DLCP (P4: ``DLCP_UDP_PORT_DEFAULT``)."""
UDP_HEADER_LEN = 8
IPV4_HEADER_LEN = 20
DLCP_HEADER_LEN = 24
VERSION = 1

# --- field widths (bits) -----------------------------------------------------------------------
VERSION_BITS = 4
MSG_TYPE_BITS = 4
LAYER_CLASS_BITS = 3
RESERVED0_BITS = 1
MAG_CLASS_BITS = 4
FLAGS_BITS = 8
DTYPE_BITS = 4
RESERVED1_BITS = 4
JOB_ID_BITS = 16
WORKER_ID_BITS = 16
ITERATION_BITS = 32
TENSOR_ID_BITS = 16
COUNT_BITS = 16
OFFSET_BITS = 32
SEQ_BITS = 32

# --- message types -----------------------------------------------------------------------------
MSG_DATA = 0
MSG_PROBE = 1
MSG_BITMAP = 2
MSG_DONE = 3
MSG_CONTROL = 4
MSG_TYPE_NAMES = {MSG_DATA: "DATA", MSG_PROBE: "PROBE", MSG_BITMAP: "BITMAP", MSG_DONE: "DONE",
                  MSG_CONTROL: "CONTROL"}

# --- classes -----------------------------------------------------------------------------------
NUM_LAYER_CLASSES = 1 << LAYER_CLASS_BITS   # 8: 7 = most urgent (front layers)
LAYER_CLASS_MAX = NUM_LAYER_CLASSES - 1
NUM_MAG_CLASSES = 1 << MAG_CLASS_BITS       # 16: 15 = largest magnitudes
MAG_CLASS_MAX = NUM_MAG_CLASSES - 1

# --- flags -------------------------------------------------------------------------------------
FLAG_CRITICAL = 0x80
FLAG_LAST = 0x40
FLAG_RETX = 0x20
FLAG_PULL = 0x10
FLAG_ECN_CAPABLE = 0x08
FLAGS_DEFINED = FLAG_CRITICAL | FLAG_LAST | FLAG_RETX | FLAG_PULL | FLAG_ECN_CAPABLE



# --- transfer token (anti-spoofing; docs/protocol.md "Transfer token") ---------------------------
# The sender picks a random 32-bit token per transfer and announces it after the descriptor in
# OPEN and PROBE bodies. Every DATA packet carries ``seq = token XOR plain``: plain is the packet
# index on a first transmission and ``retx_seq`` (< 2**(RETX_COUNTER_BITS + 1)) on a
# retransmission, so the receiver checks 32 (first) or 24 (RETX) bits without any byte the switch
# parses changing length or meaning (seq stays per-packet spray entropy to the switch).
TOKEN = struct.Struct("!I")
RETX_COUNTER_BITS = 7
RETX_COUNTER_MASK = (1 << RETX_COUNTER_BITS) - 1


def retx_seq(counter: int, originally_critical: bool) -> int:
    """Plain ``seq`` of a retransmission: fresh spray entropy, low bit = CRITICAL at first send.

    Retransmissions the receiver needs are sent CRITICAL (never selectively dropped again), so on
    a RETX packet the CRITICAL flag no longer says which packets count as critical; this bit does.
    Only ``RETX_COUNTER_BITS`` of the counter are kept: the rest of ``seq`` checks the token.
    """
    return ((counter & RETX_COUNTER_MASK) << 1) | int(originally_critical)


def plain_seq(seq: int, token: int, flags: int, index: int) -> int | None:
    """The token-free ``seq`` of a DATA packet for packet ``index``, or None if the token is wrong."""
    plain = seq ^ token
    if flags & FLAG_RETX:
        return plain if plain >> (RETX_COUNTER_BITS + 1) == 0 else None
    return plain if plain == index & 0xFFFFFFFF else None


def counts_as_critical(flags: int, seq: int) -> bool:
    """Whether a DATA packet counts towards the tensor's critical packets (see ``retx_seq``)."""
    if not flags & FLAG_CRITICAL:
        return False
    return not flags & FLAG_RETX or bool(seq & 1)


# --- element types -----------------------------------------------------------------------------
DTYPE_FLOAT32 = 0
DTYPE_FLOAT16 = 1
DTYPE_BFLOAT16 = 2
DTYPE_INT8 = 3
DTYPE_SIZES = {DTYPE_FLOAT32: 4, DTYPE_FLOAT16: 2, DTYPE_BFLOAT16: 2, DTYPE_INT8: 1}
DTYPE_NAMES = {DTYPE_FLOAT32: "float32", DTYPE_FLOAT16: "float16", DTYPE_BFLOAT16: "bfloat16",
               DTYPE_INT8: "int8"}

# IPv4 ECN codepoints (low two bits of the TOS byte).
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3

# --- header layout -----------------------------------------------------------------------------
HEADER_STRUCT = struct.Struct("!BBBBHHIHHII")
assert HEADER_STRUCT.size == DLCP_HEADER_LEN


def elem_size(dtype: int) -> int:
    """Bytes per element of ``dtype``; ValueError on an unknown code."""
    try:
        return DTYPE_SIZES[dtype]
    except KeyError:
        raise ValueError(f"unknown DLCP dtype {dtype}") from None


def data_udp_length(count: int, dtype: int) -> int:
    """The only well-formed UDP length of a DATA packet with ``count`` elements."""
    return UDP_HEADER_LEN + DLCP_HEADER_LEN + count * elem_size(dtype)


def max_elements_per_packet(mtu: int, dtype: int) -> int:
    """Whole elements fitting one IPv4/UDP/DLCP packet of ``mtu`` bytes."""
    room = mtu - IPV4_HEADER_LEN - UDP_HEADER_LEN - DLCP_HEADER_LEN
    n = room // elem_size(dtype)
    if n < 1:
        raise ValueError(f"MTU {mtu} leaves no room for one {DTYPE_NAMES[dtype]} element")
    return min(n, (1 << COUNT_BITS) - 1)


@dataclass(slots=True)
class DlcpHeader:
    """One decoded DLCP header (the 24 bytes after UDP)."""

    msg_type: int = MSG_DATA
    layer_class: int = 0
    mag_class: int = 0
    flags: int = 0
    dtype: int = DTYPE_FLOAT32
    job_id: int = 0
    worker_id: int = 0
    iteration: int = 0
    tensor_id: int = 0
    count: int = 0
    offset: int = 0
    seq: int = 0
    version: int = VERSION

    def pack(self) -> bytes:
        return HEADER_STRUCT.pack(
            (self.version << 4) | self.msg_type,
            (self.layer_class << 5) | self.mag_class,
            self.flags, self.dtype << 4, self.job_id, self.worker_id, self.iteration,
            self.tensor_id, self.count, self.offset, self.seq)

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview) -> DlcpHeader:
        """Decode the first 24 bytes; ValueError when shorter (reserved bits are ignored)."""
        if len(data) < DLCP_HEADER_LEN:
            raise ValueError(f"DLCP header needs {DLCP_HEADER_LEN} bytes, got {len(data)}")
        b0, b1, flags, b3, job, worker, it, tid, count, off, seq = HEADER_STRUCT.unpack_from(data)
        return cls(msg_type=b0 & 0xF, layer_class=b1 >> 5, mag_class=b1 & 0xF, flags=flags,
                   dtype=b3 >> 4, job_id=job, worker_id=worker, iteration=it, tensor_id=tid,
                   count=count, offset=off, seq=seq, version=b0 >> 4)


# --- host-to-host control bodies ---------------------------------------------------------------
# CONTROL messages start with a one-byte subtype (then 3 bytes of padding).
CONTROL_HEAD = struct.Struct("!B3x")
CTRL_OPEN = 1       # body: TensorDescriptor; announces a tensor before its DATA
CTRL_ECN_ECHO = 2   # body: ECN_ECHO_BODY; receiver saw CE marks on this tensor
CTRL_OPEN_ACK = 3   # no body; receiver accepted an OPEN (first contact: sender waits for it)
ECN_ECHO_BODY = struct.Struct("!I")  # cumulative CE-marked packets of this tensor
CTRL_GRANT = 4      # body: GRANT_BODY; receiver-driven rate and window for this sender (receiver.py)
GRANT_BODY = struct.Struct("!III")   # granted bytes/s, senders active towards the receiver, window (packets)
# GRANT format 2 extends the body (the first 12 bytes unchanged, so a reader of GRANT_BODY still works):
# the format (GRANT_FORMAT_FLAGS) and a flags byte. GRANT_FLAG_SHED: the receiver holds more senders than
# it admits (receiver.py, ``shed_senders``), so the sender leaves out its droppable-by-design packets to
# it (endpoint.py, ``shed_droppable``; ns-3's ``shedDroppable``). A format-1 body (12 bytes) has no flags.
GRANT_BODY_FLAGS = struct.Struct("!IIIBB2x")
GRANT_FORMAT_FLAGS = 2
GRANT_FLAG_SHED = 0x01
GRANT_FLAGS_DEFINED = GRANT_FLAG_SHED
CTRL_ACK = 5        # body: ACK_BODY; DATA packets received from this sender so far (all tensors)
ACK_BODY = struct.Struct("!I")
# ACK format 2 extends the body (the first field unchanged, so a reader of ACK_BODY still works):
# DATA received from this sender (all), of them droppable by design (not CRITICAL and magnitude
# class below the receiver's protected class), the format (ACK_FORMAT_SPLIT) and that protected
# class. The sender windows only the protected packets (ratecontrol.GrantPacer): a packet the
# switch drops by design is never acknowledged and must not hold a window slot.
ACK_BODY_SPLIT = struct.Struct("!IIBB2x")
ACK_FORMAT_SPLIT = 2


def droppable_by_design(flags, b1, protected_mag_class: int):
    """Whether a DATA packet (its flags and header byte 1) may be dropped by the switch's policy:
    not CRITICAL and its magnitude class below ``protected_mag_class``. Takes ints (a bool back) or
    numpy arrays of the two header bytes (a boolean array back: the receiver's GSO batches)."""
    return ((flags & FLAG_CRITICAL) == 0) & ((b1 & MAG_CLASS_MAX) < protected_mag_class)


def pack_ack(received: int, droppable: int | None = None, protected_mag_class: int = 0) -> bytes:
    """CONTROL/ACK body: format 1 (``droppable`` None) or format 2 (the split, see ACK_BODY_SPLIT)."""
    if droppable is None:
        return ACK_BODY.pack(received & 0xFFFFFFFF)
    return ACK_BODY_SPLIT.pack(received & 0xFFFFFFFF, droppable & 0xFFFFFFFF, ACK_FORMAT_SPLIT,
                               protected_mag_class)


def unpack_ack(body: bytes | memoryview) -> tuple[int, int | None, int]:
    """(received, droppable received or None, protected class) of a CONTROL/ACK body.

    Format 1 (4 bytes) and bodies of another format give no split (None, 0); ValueError when the
    body is shorter than 4 bytes or a format-2 body is inconsistent (more droppable packets than
    packets, a protected class outside 1..15).
    """
    if len(body) < ACK_BODY.size:
        raise ValueError(f"ACK body needs {ACK_BODY.size} bytes, got {len(body)}")
    if len(body) < ACK_BODY_SPLIT.size or body[ACK_BODY.size + 4] != ACK_FORMAT_SPLIT:
        return ACK_BODY.unpack_from(body)[0], None, 0
    received, droppable, _fmt, protected = ACK_BODY_SPLIT.unpack_from(body)
    if droppable > received or not 1 <= protected <= MAG_CLASS_MAX:
        raise ValueError(f"inconsistent ACK: {droppable} droppable of {received}, protected class {protected}")
    return received, droppable, protected

def pack_grant(rate: int, senders: int, window: int, flags: int | None = None) -> bytes:
    """CONTROL/GRANT body: format 1 (``flags`` None, 12 bytes) or format 2 (with the flags byte)."""
    if flags is None:
        return GRANT_BODY.pack(rate, senders, window)
    return GRANT_BODY_FLAGS.pack(rate, senders, window, GRANT_FORMAT_FLAGS, flags)


def unpack_grant(body: bytes | memoryview) -> tuple[int, int, int, int]:
    """(bytes/s, senders, window, flags) of a CONTROL/GRANT body.

    A format-1 body (12 bytes, or a longer one of another format) has no flags (0); ValueError when
    the body is shorter than 12 bytes, or a format-2 body is truncated or sets an undefined flag.
    """
    if len(body) < GRANT_BODY.size:
        raise ValueError(f"GRANT body needs {GRANT_BODY.size} bytes, got {len(body)}")
    rate, senders, window = GRANT_BODY.unpack_from(body)
    if len(body) == GRANT_BODY.size or body[GRANT_BODY.size] != GRANT_FORMAT_FLAGS:
        return rate, senders, window, 0
    if len(body) < GRANT_BODY_FLAGS.size:
        raise ValueError(f"GRANT format {GRANT_FORMAT_FLAGS} needs {GRANT_BODY_FLAGS.size} bytes, got {len(body)}")
    flags = body[GRANT_BODY.size + 1]
    if flags & ~GRANT_FLAGS_DEFINED:
        raise ValueError(f"GRANT flags {flags:#04x}: undefined bits {flags & ~GRANT_FLAGS_DEFINED:#04x}")
    return rate, senders, window, flags


# Kind of payload a tensor carries (decides loss semantics at the receiver).
KIND_GRADIENT = 0    # missing elements are zero-filled
KIND_PARAMETER = 1   # missing elements keep the receiver's previous value

LOSS_BOUND_SCALE = 1_000_000  # loss bound carried in parts per million


@dataclass(frozen=True, slots=True)
class TensorDescriptor:
    """What a receiver must know to place a tensor: carried by CONTROL/OPEN and every PROBE."""

    n_elements: int
    elems_per_packet: int
    n_packets: int
    n_critical: int
    loss_bound_ppm: int
    kind: int = KIND_GRADIENT

    STRUCT = struct.Struct("!IIIIIB3x")

    def pack(self) -> bytes:
        return self.STRUCT.pack(self.n_elements, self.elems_per_packet, self.n_packets,
                                self.n_critical, self.loss_bound_ppm, self.kind)

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> TensorDescriptor:
        if len(data) < cls.STRUCT.size:
            raise ValueError("tensor descriptor truncated")
        d = cls(*cls.STRUCT.unpack_from(data))
        expected = -(-d.n_elements // d.elems_per_packet) if d.elems_per_packet else -1
        if d.elems_per_packet == 0 or d.n_packets != expected or d.n_critical > d.n_packets:
            raise ValueError("inconsistent tensor descriptor")
        if d.loss_bound_ppm > LOSS_BOUND_SCALE or d.kind not in (KIND_GRADIENT, KIND_PARAMETER):
            raise ValueError("tensor descriptor out of range")
        return d


def unpack_announcement(body: bytes | memoryview) -> tuple[TensorDescriptor, int]:
    """Descriptor and transfer token of an OPEN or PROBE body; ValueError when malformed."""
    desc = TensorDescriptor.unpack(body)
    if len(body) < TensorDescriptor.STRUCT.size + TOKEN.size:
        raise ValueError("transfer token missing")
    (token,) = TOKEN.unpack_from(body, TensorDescriptor.STRUCT.size)
    return desc, token


# BITMAP body: the receiver's received-bitmap for one probe round, cut into MTU-sized chunks.
# bit i (LSB-first within each byte) of a chunk is packet ``first_packet + i``; 1 = received.
BITMAP_HEAD = struct.Struct("!IHHIIII")  # round, chunk, n_chunks, first_packet, n_bits, deficit, missing_critical
BITMAP_CHUNK_BITS = 8 * 1024

# DONE body: the receiver's final accounting of the tensor.
DONE_BODY = struct.Struct("!IIIII")  # received packets, zero-filled packets, zero-filled elements, duplicates, CE marks


# --- scapy layer -------------------------------------------------------------------------------
class DLCP(Packet):
    """scapy dissector/builder for the 24-byte DLCP header."""

    name = "DLCP"
    fields_desc = [
        BitField("version", VERSION, VERSION_BITS),
        BitEnumField("msg_type", MSG_DATA, MSG_TYPE_BITS, MSG_TYPE_NAMES),
        BitField("layer_class", 0, LAYER_CLASS_BITS),
        BitField("reserved0", 0, RESERVED0_BITS),
        BitField("mag_class", 0, MAG_CLASS_BITS),
        # scapy lists flag names from bit 0 upwards.
        FlagsField("flags", 0, FLAGS_BITS, ["R0", "R1", "R2", "ECN_CAPABLE", "PULL", "RETX", "LAST",
                                            "CRITICAL"]),
        BitEnumField("dtype", DTYPE_FLOAT32, DTYPE_BITS, DTYPE_NAMES),
        BitField("reserved1", 0, RESERVED1_BITS),
        ShortField("job_id", 0),
        ShortField("worker_id", 0),
        IntField("iteration", 0),
        ShortField("tensor_id", 0),
        ShortField("count", 0),
        IntField("offset", 0),
        IntField("seq", 0),
    ]


bind_layers(UDP, DLCP, dport=DLCP_UDP_PORT)
