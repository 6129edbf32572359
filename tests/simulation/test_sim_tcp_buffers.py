"""TCP socket buffers in ns-3: Linux's maxima, so a bulk flow keeps line rate without burying its
host's queue (issue 13).

Why this exists: ns-3 has no TCP small queues, and the host ports hold HOST_QUEUE_PACKETS, so a
sender's window in slow start grows into its own host FIFO until the send buffer stops it. With
16 MiB buffers a web-search background flow put megabytes there: every other packet of that host
(DLCP's included) waited behind them, and ns-3's TcpTxBuffer, which walks its sent list from the
head for every retransmission, spent most of the load-0.6 goal run's CPU on such windows
(docs/simulation.md "Where the load-0.6 time goes"). build_network now sets Linux's tcp_wmem /
tcp_rmem maxima (4 MiB / 6 MiB). The test: on scale-16 (100 Gbit/s hosts, one leaf) h1 sends 40 MB
to h2 and, 2.5 ms later, 10 kB to h3. The bulk flow still runs at line rate (3,330 us); the short
flow waits behind at most the send buffer twice (its SYN, then its data, each behind a 4 MiB
window in the FIFO: 2 x 348 us; measured 694 us), where 16 MiB buffers let the bulk flow's window
grow past that (measured 834 us, and growing with the flow). Real ns-3, in one fresh process. Budget: about 30 s
(most of it the ns-3 import).
"""

from __future__ import annotations

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.scenario import PAYLOAD, TCP_SNDBUF_BYTES
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

BULK, SHORT, LATER = 40_000_000, 10_000, 2.5e-3
WIRE = 1500 / PAYLOAD            # bytes on the wire per payload byte (IP + TCP + options)


def test_bulk_flow_keeps_line_rate_and_a_later_short_flow_waits_at_most_the_send_buffer(ns3_installed) -> None:
    topo = preset("scale-16")
    spec = JobSpec(None, bulk=[(1, 2, BULK, 0.0), (1, 3, SHORT, LATER)], max_sim_s=0.01, progress=False)
    (r,) = run_jobs_fresh([({}, topo, load_policy(FABRIC_POLICY), "dlcp", spec)])
    bulk, short = sorted(r.transfers, key=lambda t: -t["bytes"])
    assert bulk["completed"] and short["completed"], r.transfers
    line = 100e9 / 8
    assert bulk["fct_s"] <= 1.1 * BULK * WIRE / line, bulk        # not window-limited: line rate
    drain = TCP_SNDBUF_BYTES * WIRE / line                          # the most the host FIFO holds of it
    assert short["fct_s"] <= 2 * drain + 50e-6, (short, drain)
