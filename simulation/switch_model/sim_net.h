// sim_net.h -- what every end host of a dlcp-sim run shares: the transfer records the run reports,
// the transports' knobs, and the run's registry of hosts and transfers (SimNet).
//
// Why this file exists: the DLCP transport (dlcp_transport.h), the TCP path (tcp_path.h), the
// pFabric-like transport (pfabric_transport.h) and the workloads (workloads.h) all record into the
// same transfers and read the same knobs; Python (simulation/job.py, scenario.py) fills SimNet
// before Simulator::Run and reads it after. Compiled first of the host headers
// (simulation/switch_model/__init__.py), after dlcp_switch.h and pfabric_queue.h.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/traffic-control-module.h"

namespace dlcpsim {

constexpr uint8_t kMsgProbe = 1, kMsgBitmap = 2, kMsgDone = 3, kMsgControl = 4;   // protocol.py MSG_*
constexpr uint8_t kFlagRetx = 0x20, kFlagPull = 0x10;
constexpr uint8_t kFlagShed = 0x01;             // GRANT: shedDroppable (the receiver holds other senders)
constexpr uint8_t kSubOpen = 1, kSubEcnEcho = 2, kSubGrant = 4, kSubAck = 5;   // protocol.py CTRL_*
constexpr uint16_t kTcpPort = 5000;
constexpr uint32_t kElem = 4;                 // float32

// One transfer (a gradient push, a parameter pull, a background flow): what the run reports.
struct TransferRec {
  uint32_t src = 0, dst = 0;                  // host indices
  uint64_t bytes = 0;
  uint8_t layer = 0;
  uint8_t kind = 0;                           // 0 gradient push, 1 parameter pull, 2 background
  bool dlcp = false;
  double lossBound = 0;
  double start = -1, end = -1;                // s; end = receiver complete
  uint32_t packets = 0, critical = 0, droppable = 0;
  uint32_t sent = 0, retx = 0, probes = 0, rounds = 0, zeroFilled = 0, ceMarks = 0, shed = 0;
  int32_t iteration = -1;
  double grantWait = 0;                       // s its DATA waited for the GRANT answering its OPEN
  // s its next DATA was held, by cause (the pacer's own gaps not counted): the receiver's HOLD
  // (overcommitment), the grant's token bucket, the window of DATA in flight
  double holdWait = 0, tokenWait = 0, windowWait = 0;
  double answerWait = -1;                     // s first contact waited for any answer (GRANT/HOLD); -1: not first contact
};

// Knobs of the DLCP transport in simulated time (host_agent's defaults scaled to the fabric).
struct TransportConfig {
  double criticalShare = 0.05;                // TagPolicy.critical_share
  uint8_t protectedMag = 12;                  // TagPolicy.protected_mag_class
  uint32_t payload = 1448;                    // bytes of DATA payload (362 float32)
  double rtoInit = 1e-3, rtoMin = 1e-3, rtoMax = 0.5;   // s (host_agent 20 ms / 0.5 s; TCP MinRto here)
  double holdoff = 20e-6;                     // s: PROBE answered after DATA was quiet this long
  double ecnEchoGap = 10e-6;                  // s: at most one ECN_ECHO per tensor per gap
  double decreaseGap = 20e-6;                 // s: at most one rate cut per gap (about one RTT)
  double increaseInterval = 20e-6;            // s
  double additiveFrac = 0.02;                 // of the rate set by the last cut ...
  double additiveLineFrac = 0.05;             // ... or this share of the line rate, the larger
  double minRateFrac = 0.01;                  // floor, as a share of the line rate
  // receiver-driven admission (host_agent receiver.py / ratecontrol.GrantPacer / endpoint.py)
  bool grants = true;                         // receivers grant (host_agent: when the link rate is known)
  // GRANT_SHARE: of the receiver's link, split over active senders. 1.0 as host_agent since session 9
  // (273fe8c; 0.93 before, here until session 10): with 0.93 a receiver's granted senders together
  // fill at most 0.93 of its link, so an incast's queue stays below the selective-drop depths and
  // the loss bound never acts; with the whole link granted the senders' pacing jitter lets the
  // queue reach them (tests/simulation/test_sim_grant_share.py; docs/simulation.md "grant share")
  double grantShare = 1.0;
  uint32_t windowPackets = 40;                // WINDOW_PACKETS: all granted senders together in flight ...
  uint32_t windowMin = 4;                     // WINDOW_MIN: ... but each at least this many
  uint32_t ackEvery = 4;                      // ACK_EVERY: CONTROL/ACK after this many DATA from a sender
  // Not in host_agent: a receiver that holds senders (overcommit, more than overcommitSenders active)
  // flags its GRANTs (kFlagShed), and a sender whose last GRANT from that receiver carried the flag
  // does not send its droppable-by-design packets to it (not CRITICAL, magnitude class below
  // protectedMag: the smallest-|g| packets the loss bound lets the receiver zero-fill; never the LAST,
  // never in a retransmission round), as the switches would drop them first under pressure. A
  // receiver that got the PROBE finishes a transfer on the DATA that makes its rule hold (the PROBE,
  // in the control queue, can overtake the last DATA). Why: paper-144, load 0.6, iteration 1 (seed 1,
  // hostControlFirst): the PS link carried 608.1 us of push DATA where the fluid without droppable
  // packets needs 590.9; the 143 droppable packets (one per worker, in its 16,012-byte group) cost
  // 7.8 us of the 23.4 between the measured mean and DLCP's own whole-sender fluid. With it (goal
  // command, iterations 0-1): gradient mean 275.8 -> 268.3 us (seed 1), 276.4 -> 268.8 (2), 275.9 ->
  // 268.3 (3), p99 and PS iteration lower on all three. Cost: those packets are zero-filled (within
  // the loss bound): 249 gradient packets of 10,868 instead of 104, parameters none. On since session
  // 17 (tests/simulation/test_sim_shed_droppable.py; docs/simulation.md "Where iteration 1 still
  // loses"). Off: every packet is sent; only the switches drop (the behaviour up to session 16)
  bool shedDroppable = true;
  // lastAsProbe: a receiver takes a transfer's LAST DATA packet in its first transmission (LAST
  // flag, no RETX) as the round-0 PROBE it precedes: probed; finish if the rule holds, else the
  // hold-off BITMAP a PROBE arms (dlcp_transport.h OnData; the rule in docs/simulation.md, session
  // 18). Why: a shed transfer never gets all n packets, so it finished only on its PROBE and a lost
  // PROBE cost an RTO (tests/simulation/test_sim_first_contact.py's burst: 257 us against <= 135).
  // The sender still sends the PROBE (a lost LAST falls back to it). Off: only a PROBE (session 17)
  bool lastAsProbe = false;
  // preemptWait: with classAdmission, a sender whose destination's GRANT carries the shed flag (the
  // receiver holds others) and whose top-class transfer there has sent its first round sends at most
  // ``unscheduled`` DATA of a lower-class transfer there until that transfer's DONE (with which the
  // receiver's HOLD, if it pre-empts us, leaves) or a grant wait. Why: the pre-emption lag, a pre-empted
  // sender's lower class flowing for one finish -> HOLD trip (9-10 packets per sender per round) into a
  // queue served only between rounds, overflowed q1 in tests/simulation/test_sim_overcommit.py's class
  // run with shedDroppable (9 class-0 DATA lost, last class-0 115.4 us; 54 of 64 deep without shed).
  // Session 18, off by default (measured on that run only): no drops there, last class-0 94.3 us
  bool preemptWait = false;
  uint32_t unscheduled = 4;                   // UNSCHEDULED_PACKETS before the GRANT answering an OPEN
  double grantIdle = 500e-6;                  // s (host_agent GRANT_IDLE 0.5 s): sender no longer active
  double grantTick = 20e-6;                   // s (GRANT_TICK 20 ms): check for senders gone quiet
  double grantBurstS = 2e-6;                  // s of the grant a destination's bucket holds (GRANT_BURST_S 2 ms) ...
  double grantBurstMin = 3000;                // ... but at least this many bytes (GRANT_BURST_MIN: two packets)
  double grantFloor = 1e4;                    // bytes/s (GRANT_FLOOR)
  double grantWaitMin = 1e-3;                 // s (GRANT_WAIT_MIN 0.1 s): no GRANT within max(this, 2 RTO): go on
  double writeOffMin = 1e-3;                  // s (WRITE_OFF_MIN 0.1 s): closed window unacknowledged this long: lost
  double writeOffRtos = 2;                    // ... or this many RTOs, the longer (host_agent: 2)
  // Not in host_agent: a round's answer also writes off exactly that transfer's lost packets (sent -
  // received by the BITMAP/DONE), even while another transfer to the receiver is sending; without
  // it, overlapping transfers to one receiver (a PS job's groups) wait for the timer above
  bool writeOffPerTransfer = true;
  // Not in host_agent: any GRANT from a receiver answers every transfer to it whose OPEN went out
  // before (the grant is per sender, so it is current for all of them); host_agent waits for the
  // GRANT naming the tensor, and a lost OPEN (a 572:1 incast of OPENs into one 64-packet control
  // queue at 143 workers x 4 groups) then costs the grant wait, max(1 ms, 2 RTO), per transfer
  bool grantAnswersAll = true;
  // standby grants (host_agent since H10-2, 090cbb0; receiver.py GRANT_MEMORY): a receiver keeps
  // every sender active in the last grantMemory on the share it would get if all of them came back,
  // grantShare x link / n recent (window max(windowMin, windowPackets / n recent)), so a sender's
  // next transfer starts at once at its last grant (active or standby); only first contact waits for
  // the GRANT answering its OPEN. Off: the earlier rule (unscheduled packets, then that GRANT)
  bool standbyGrants = true;
  double grantMemory = 2e-3;                  // s (GRANT_MEMORY 2 s, scaled as grantIdle)
  // Not in host_agent: overcommitment (Homa, Montazeri et al., SIGCOMM 2018): a receiver with more
  // than overcommitSenders active senders grants only that many at a time (the longest-waiting
  // first, never pre-empting one it granted) and sends every other one a HOLD (a GRANT of rate 0):
  // the held sender sends no DATA to it until a GRANT comes (re-sending its OPEN every grant wait, so
  // a lost OPEN or GRANT costs one grant wait). Granted senders share a window of
  // max(windowPackets, windowBdps x the receiver's bandwidth-delay product over baseRtt) packets
  // (windowMin each at least). While senders are held, one that finishes gets a HOLD instead of a
  // standby grant; standby grants stand only while n recent <= overcommitSenders. First contact is
  // held too (the GRANT answering its OPEN ends it; OPEN again every grant wait), where host_agent
  // (and overcommit off) sends at its own line rate once a grant wait passed. Off: host_agent's
  // rule (every active sender granted link / n and max(windowMin, windowPackets / n) packets)
  bool overcommit = true;
  // senders granted at once (Homa's overcommitment degree): 28 since session 6 (was 16). On the goal
  // command (paper-144, 143 workers, no background) with per-sender admission, 16 and 20 gave PS
  // iterations of 1.106 / 1.109 ms, 24-32 gave 1.081-1.087 ms (1.32x TCP cubic's 1.429) with gradient
  // FCT mean 264-271 us; 28 is the middle of that plateau (docs/simulation.md "Admission frontier")
  uint32_t overcommitSenders = 28;
  double windowBdps = 2.0;                    // the granted senders' window, in BDPs of the receiver's link
  double baseRtt = 0;                         // s: the fabric's base RTT (simulation/job.py sets it; 0: no BDP term)
  double regrantChange = 0.25;                // re-grant an active sender only when its share moves more than this
  // Not in host_agent (which serves its tensors round robin): a sender's pacer serves the transfer
  // with the fewest packets left to send first, the earliest on a tie (Homa's sender SRPT), so a
  // PS's pull fan-out completes worker by worker instead of all together at the end
  bool senderSrpt = true;
  // Not in host_agent: layer-class admission. With more than overcommitSenders active senders a
  // receiver grants the senders whose unfinished transfers have the top layer class (the policy's
  // priority: front layers are needed first by the next forward pass), the ones granted before
  // first within a class, then the earliest OPEN, and holds the rest, pre-empting a granted sender
  // whose top class fell below a waiting one's; a sender's pacer serves its top layer class first
  // (then senderSrpt's order). Why: granting whole senders the longest-waiting first made a PS take
  // every group from 16 workers, then from the next 16, so no group was complete (and no pull could
  // start) before the last worker's turn: the pushes and pulls of an iteration ran one after the
  // other. Off: the longest-waiting senders, never pre-empted; the sender's order by senderSrpt alone
  // Off by default since session 6: with it the goal command's iteration is 0.912 ms (1.57x TCP cubic)
  // but the gradient FCT mean 351 us (-16 % vs DCTCP); off, with 28 senders, 1.081 ms (1.32x) and
  // 269 us (-36 %): the only measured setting that meets both goals ("Admission frontier")
  bool classAdmission = false;
  bool classPreempt = true;                   // classAdmission pre-empts (off: the granted stay, the rest fill by class)
  // classAdmission ranks the top classBands layer classes present among a receiver's active senders as
  // one (then the ones granted before first, then the earliest OPEN): 1 = one class group at a time;
  // 2 = a granted sender keeps its grant into its next class while that is among the top two (two
  // groups in flight); >= the number of classes = whole senders again, ranked by OPEN. Why: one group
  // at a time overlaps the pulls with the pushes (iteration time) but makes the groups pushed first
  // wait for every worker's front groups (mean FCT); the bands are the setting between (issue 13)
  uint32_t classBands = 1;
  // Not in host_agent (whose first contact waits GRANT_WAIT for a lost OPEN): a sender with no answer
  // (GRANT or HOLD) yet from a receiver sends its OPENs again after openRetryAfter x (1 + u), u uniform
  // in [0, 1) per retry and host, doubling up to the grant wait, until an answer comes. openRetryAfter
  // is the fabric's longest control round trip without a loss (simulation/job.py: base RTT + the
  // control queue, queue_depth full-size packets, drained at every switch port both ways; 31.6 us on
  // paper-144), so a retry never fires for an OPEN that is only queued. Why: a first iteration's
  // OPENs all leave at once (143 workers x 4 groups = 572 OPENs into a 64-packet control queue at the
  // PS's port); the 397 lost ones waited the 386 us grant wait, which set iteration 0 and the run's
  // p99. The jitter spreads the retries, so they do not meet in the control queue again.
  bool openRetry = true;
  double openRetryAfter = 0;                  // s; 0: no retry (simulation/job.py sets it per fabric)
  // Not in host_agent (it has no HOLD): a sender that was granted by a receiver and is then held by it
  // while it still has unfinished transfers to it sends their OPENs again at once. A receiver holds a
  // granted sender (without classAdmission's pre-emption) only when it knows no unfinished transfer of
  // it, so those transfers' OPENs were lost; the first answer (a HOLD or GRANT for another transfer)
  // had ended openRetry, and they waited a whole grant wait (386 us on paper-144) for the held
  // sender's re-OPEN. Why: paper-144, load 0.6, iteration 0: 234 of 572 OPENs were tail-dropped in
  // the PS port's control queue; 9 gradients of 5 workers (seed 1) whose first two groups finished by
  // 430 us were held until 816 us, re-OPENed, and finished at 830-873 us: the run's p99 (832.6 us;
  // every other gradient was done by 700 us). Off: wait for the grant wait's re-OPEN (session 8)
  bool reopenOnHold = true;
  // Not in host_agent (which grants every active sender): with overcommit and more than
  // overcommitSenders active senders, the senders to fill the granted set are taken fewest packets
  // left first (the unfinished transfers this receiver knows of: sum of n - received), the earliest
  // OPEN on a tie (pFabric's / Homa's SRPT at the receiver), instead of the earliest OPEN alone; the
  // ones granted before stay (no pre-emption) either way. Off by default (session 10: in paper-144's
  // iteration 0 every worker has the same four groups, so sizes tie; docs/simulation.md)
  bool admitSrpt = false;
  // Not in host_agent (which grants every active sender): with overcommit and more than
  // overcommitSenders active senders, a granted sender whose packets left here (the unfinished
  // transfers this receiver knows of) fall to grantAhead x baseRtt x its share's rate or fewer no
  // longer counts against overcommitSenders, so the next held sender is granted about that long
  // before the finishing one's last packet arrives (Homa's grant-ahead by a round trip: the new
  // sender's first DATA arrives as the old one's last does); the shares and windows are those of the
  // senders that still count, so the link is overcommitted by the finishing senders' last packets.
  // Checked on each DATA packet of a granted sender's transfer below the threshold while senders are
  // held. Why: paper-144, load 0.6, iteration 0: each hand-over between granted senders left the PS
  // link idle a round trip (overcommitSenders=12: 0.65-0.79 of the link between turns). 1.0 (one
  // round trip) by default since session 11 (0 before): at paper-144, load 0.6, iteration 0 it
  // lowered the gradient FCT mean by 5.6-5.7 % and the p99 by 4.9-6.1 % on each of seeds 1-4 with
  // the same losses, and on the goal command (no background) the iteration 1.067 -> 1.058 ms, the
  // mean 260.9 -> 253.1 us (docs/simulation.md "Grant ahead by default"). Not with fewer senders at
  // once: with overcommitSenders=12 it was better still at paper-144 (mean 318 us) but a burst of
  // small transfers from 63 senders (test_sim_first_contact.py's) lost 153 DATA and 54 PROBE
  // packets in queues 1-6 (none at 28, nor at 12 without it; aheadBudget below bounds that). 0: off
  // (a held sender is granted only when a granted one finishes or goes quiet)
  double grantAhead = 1.0;
  // A bound on grantAhead's finishing senders (not in host_agent): together they may have at most
  // aheadBudget x the threshold (the packets one sender on overcommitSenders' share sends in
  // grantAhead x baseRtt) packets left here; past that, the finishing senders with the most packets
  // left count against overcommitSenders again (the fewest left stay uncounted: they finish first), so
  // the link is overcommitted by at most aheadBudget senders' round trip. Why: with
  // overcommitSenders=12 the unbounded finishing set lost packets on test_sim_first_contact's burst of
  // small transfers (scale-64, 168 transfers of 5-20 kB into h0): up to 42 senders granted at once, 30
  // of them finishing, 153 DATA and 54 PROBE tail-dropped in q1-q6 (127 DATA in q1). With aheadBudget 1:
  // at most 18 granted (6 finishing), only OPENs lost, mean FCT 78.3 us (145.7 unbounded, 80.6 without
  // grant-ahead); 2 and 4 still lost 26 and 40 DATA. Off by default: at paper-144, load 0.6, iteration 0
  // (seeds 1-3) 12 senders + aheadBudget 1 lowered the gradient mean by 0.8-1.0 % against the default
  // (28, no bound; 322.1-322.5 vs 325.1-325.5 us) with no retransmission, but made the iteration slower
  // on each seed (1.234-1.236 vs 1.218-1.227 ms) (tests/simulation/test_sim_ahead_budget.py;
  // docs/simulation.md "A bound on the finishing senders").
  // 0: no bound
  double aheadBudget = 0;
  // pFabric-like baseline (Alizadeh et al., SIGCOMM 2013, section 4): every transfer that is not DLCP
  // runs it when on; scenario.py sets these from the fabric (BDP, 3 x RTT) for --modes pfabric
  bool pfabric = false;
  uint32_t pfWindow = 12;                     // packets: initial window = one bandwidth-delay product
  double pfRto = 45e-6;                       // s: fixed retransmission timeout (about 3 RTTs)
  uint32_t pfProbeAfter = 5;                  // consecutive timeouts before probe mode (one packet per RTO)
  // Host egress priority (not in host_agent; on since session 8): every host port is a 2-band
  // PrioQueueDisc (InstallHostPrio) and DLCP's packets carry socket priority 6 (DlcpHost::SendTo tags
  // each packet), so DLCP's DATA and control leave ahead of the host's own TCP (SO_PRIORITY with a
  // prio/mqprio qdisc on Linux), as the switches' priority map puts DLCP ahead of non-DLCP traffic.
  // Why: with background at load 0.6 a host's TCP windows sit in its egress queue (up to the 4 MiB
  // send buffer, 348 us at 100 Gbit/s; ns-3 has no TCP small queues) ahead of its DLCP DATA and
  // GRANTs; a granted sender's window, sized for the fabric's RTT, then took that long to clear, so the
  // receiver's granted senders crawled and the held ones waited. paper-144, load 0.6, seed 1: job
  // iteration 3.068 -> 1.219 ms, gradient FCT mean 816 -> 345 us (docs/simulation.md "Load 0.6").
  // Off: one FIFO of HOST_QUEUE_PACKETS per host port, every packet in arrival order. Read by
  // scenario.build_links too (so it is a per-process default, never a per-run override)
  bool hostPriority = true;
  // With hostPriority, DLCP's control (OPEN, GRANT/HOLD, ACK, ECN echo, PROBE, BITMAP, DONE) in a band of
  // its own ahead of DLCP's DATA (socket priority 7; a 3-band PrioQueueDisc), as the switches serve it
  // (q7) ahead of every data queue; not in host_agent (one socket, one priority). Why: paper-144, load
  // 0.6, iteration 1 (seed 1): the PS's ACKs and GRANTs queued behind its own pull DATA in its host
  // port's DLCP band while the iteration-0 pulls were still going out (the first 200 us of the next
  // pushes): the ACKs took 7-11.9 us instead of 4.0-4.1 to reach the granted workers, their 5-packet
  // windows stalled, and the PS link ran at 76-93 % for ~110 us with 35-85 workers waiting. With it
  // (seed 1, iterations 0-1): gradient mean 281.8 -> 275.8 us (iteration 1: 238.4 -> 226.4, its p99
  // 450.3 -> 429.4; iteration 0 unchanged), the run's p99 615.4 -> 616.8 us, PS iteration 1.141 ->
  // 1.130 ms. Seeds 2 and 3: mean 282.8 -> 276.4 and 282.4 -> 275.9 us, PS iteration faster on all
  // three, the pooled p99 +1.4, +1.6, -2.3 us. On since session 16 (tests/simulation/
  // test_sim_host_control_first.py; docs/simulation.md "Where the steady-state mean goes"). Off: one
  // DLCP band, DATA and control in arrival order (the behaviour up to session 15). Read from the
  // per-process defaults, as hostPriority (the host ports are built first)
  bool hostControlFirst = true;
};

// A host port as ``hostPriority`` wants it: band 0 for socket priority 6 (DLCP), band 1 for the
// rest, each a FIFO of ``packets`` (``hostControlFirst``: DLCP control at 7 in a band ahead of both).
inline TransportConfig& TransportDefaults();
inline void InstallHostPrio(ns3::Ptr<ns3::NetDevice> dev, uint32_t packets) {
  ns3::TrafficControlHelper tch;
  bool control = TransportDefaults().hostControlFirst;   // band 0 for priority 7 (DLCP control), then 6, then the rest
  uint16_t root = tch.SetRootQueueDisc("ns3::PrioQueueDisc", "Priomap",
                                       ns3::StringValue(control ? "2 2 2 2 2 2 1 0 2 2 2 2 2 2 2 2"
                                                                : "1 1 1 1 1 1 0 1 1 1 1 1 1 1 1 1"));
  auto classes = tch.AddQueueDiscClasses(root, control ? 3 : 2, "ns3::QueueDiscClass");
  for (auto c : classes)
    tch.AddChildQueueDisc(root, c, "ns3::FifoQueueDisc", "MaxSize",
                          ns3::QueueSizeValue(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, packets)));
  tch.Install(dev);
}

// Defaults every run of this process starts from (as ns-3's Config::SetDefault): ablations change
// them before a run (simulation/switch_model/transport_knobs.py), SimNet::Reset copies them.
inline TransportConfig& TransportDefaults() { static TransportConfig c; return c; }
inline void ResetTransportDefaults() { TransportDefaults() = TransportConfig(); }

class DlcpHost;

// Everything of one run: hosts, transfers, the workload's completion hook.
class SimNet {
 public:
  static SimNet& Get() { static SimNet net; return net; }
  void Reset() { *this = SimNet(); }
  std::vector<ns3::Ptr<DlcpHost>> hosts;
  std::vector<uint32_t> addr;                 // host index -> IPv4
  std::vector<uint64_t> lineRate;             // host index -> bps
  std::vector<TransferRec> transfers;
  std::function<void(uint32_t)> onDone;       // receiver completed transfer id
  TransportConfig cfg = TransportDefaults();
  uint64_t dataPackets = 0, ctrlPackets = 0;
  uint64_t grantsSent = 0, acksSent = 0, grantsMissed = 0, windowStalls = 0, writeOffs = 0, standbyGrantsSent = 0;
  uint64_t holdsSent = 0, holdReopens = 0;    // HOLDs sent (overcommitment); OPENs re-sent by held senders
  uint64_t lastProbes = 0;                    // lastAsProbe: LAST packets taken as the round-0 PROBE
  uint64_t openRetries = 0;                   // first contact: OPENs re-sent for want of any answer (openRetry)
  uint64_t holdOpens = 0;                     // OPENs re-sent by a granted sender on a HOLD (reopenOnHold)
  std::vector<uint64_t> ctrlBytesIn, ctrlBytesOut;   // host index -> DLCP control bytes (UDP payload) received / sent
  uint64_t pfData = 0, pfRetx = 0, pfTimeouts = 0;
  uint32_t activeSendersMax = 0;
  // grantAhead's granted set while a receiver holds senders (Regrant): the most senders granted at
  // once, the most of them finishing (uncounted); receiver-seconds with senders held, and with more
  // than overcommitSenders granted
  uint32_t grantedSetMax = 0, finishingMax = 0;
  double heldS = 0, overBoundS = 0;
  // How long packets waited in each host's egress queue disc (WatchHostQueue), by what they were:
  // host index -> [DLCP DATA, DLCP control/PROBE/BITMAP/DONE, anything else (TCP)]
  struct QueueWait { uint64_t n = 0, over10us = 0, drops = 0; double sum = 0, max = 0; };
  std::vector<std::array<QueueWait, 3>> hostQueueWait;

  uint32_t Add(uint32_t src, uint32_t dst, uint64_t bytes, uint8_t layer, uint8_t kind, bool dlcp, double p) {
    TransferRec r;
    r.src = src; r.dst = dst; r.bytes = bytes; r.layer = layer; r.kind = kind; r.dlcp = dlcp; r.lossBound = p;
    transfers.push_back(r);
    return (uint32_t)transfers.size() - 1;
  }
  void Complete(uint32_t id) {
    TransferRec& r = transfers[id];
    if (r.end >= 0) return;
    r.end = ns3::Simulator::Now().GetSeconds();
    if (onDone) onDone(id);
  }
  uint32_t HostOf(uint32_t ip) const {
    for (uint32_t i = 0; i < addr.size(); ++i) if (addr[i] == ip) return i;
    return UINT32_MAX;
  }
};

// A packet left host ``host``'s egress queue disc: count its wait there (SimNet::hostQueueWait).
// UDP to or from the DLCP port is DLCP (its first payload byte names DATA or a control message).
inline int HostQueueKind(ns3::Ptr<const ns3::QueueDiscItem> item) {
  int kind = 2;
  auto ip = ns3::DynamicCast<const ns3::Ipv4QueueDiscItem>(item);
  if (ip && ip->GetHeader().GetProtocol() == 17 && item->GetPacket()->GetSize() > 8) {
    uint8_t b[9];
    item->GetPacket()->CopyData(b, 9);
    uint16_t sport = (uint16_t)((b[0] << 8) | b[1]), dport = (uint16_t)((b[2] << 8) | b[3]);
    if (sport == kDlcpPortDefault || dport == kDlcpPortDefault) kind = (b[8] & 0x0F) == kMsgData ? 0 : 1;
  }
  return kind;
}
inline void OnHostDequeue(uint32_t host, ns3::Ptr<const ns3::QueueDiscItem> item) {
  auto& all = SimNet::Get().hostQueueWait;
  if (all.size() <= host) all.resize(host + 1);
  int kind = HostQueueKind(item);
  double wait = (ns3::Simulator::Now() - item->GetTimeStamp()).GetSeconds();
  SimNet::QueueWait& w = all[host][kind];
  w.n++;
  w.sum += wait;
  w.max = std::max(w.max, wait);
  if (wait > 10e-6) w.over10us++;
}
inline void OnHostDrop(uint32_t host, ns3::Ptr<const ns3::QueueDiscItem> item) {
  auto& all = SimNet::Get().hostQueueWait;
  if (all.size() <= host) all.resize(host + 1);
  all[host][HostQueueKind(item)].drops++;
}
// Count the waits in the egress queue disc of ``node``'s host port (device 1) as host ``host``.
// Tracing adds no event: a watched run is the same run.
inline void WatchHostQueue(ns3::Ptr<ns3::Node> node, uint32_t host) {
  auto q = node->GetObject<ns3::TrafficControlLayer>()->GetRootQueueDiscOnDevice(node->GetDevice(1));
  if (!q) return;
  q->TraceConnectWithoutContext("Dequeue", ns3::MakeBoundCallback(&OnHostDequeue, host));
  q->TraceConnectWithoutContext("Drop", ns3::MakeBoundCallback(&OnHostDrop, host));
}

inline uint64_t Rng64(uint64_t& s) {          // splitmix64: deterministic per transfer
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint32_t Get32(const uint8_t* p) { return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]; }

}  // namespace dlcpsim
