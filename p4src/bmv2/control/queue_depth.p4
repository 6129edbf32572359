/*
 * queue_depth.p4 (v1model) -- the true occupancy of every (port, queue),
 * counted: ingress counts what it hands to each queue, egress what leaves it.
 *
 * Why this file exists: the selective-drop rule needs the depth of the queue
 * a packet is headed for, and v1model has no per-queue depth.  BMv2 (and
 * p4sim, which follows it) report in enq_qdepth/deq_qdepth the whole PORT's
 * occupancy, all 8 priority queues together (a queue-0 backlog then looked
 * like congestion to strict-priority queue 6).  The next version estimated
 * a queue's depth from the time its packet waited (deq_timedelta x the
 * port's drain rate); but a wait also grows with the service of higher
 * queues and with every stall of a software switch: measured in Mininet,
 * 99 % of selective drops happened while the queue held <= 16 packets, and
 * estimates exceeded the 64-packet capacity (docs/dataplane.md "Per-queue
 * depth").  Counting measures occupancy, not time:
 *
 *   ingress   depth(port, q) = enq_count[port*8+q] - deq_count[port*8+q]
 *             (the packets in queue q ahead of this one); the drop/ECN rule
 *             runs on it; then, unless the packet is dropped or the counts
 *             say the queue is full (the TM is about to tail-drop it),
 *             enq_count += 1.
 *   egress    deq_count += 1 for every packet ingress counted (instance
 *             type NORMAL).  Corrections, from deq_qdepth (the port's
 *             occupancy after this packet left; no queue of the port can
 *             hold more): the own queue is clamped to it (a tail drop or
 *             capacity the counts did not know of), and when the port is
 *             empty every queue of the port is resynced to 0 (this is what
 *             keeps a quiet queue from reading stale: a port goes quiet
 *             only after a dequeue that left it empty).
 *
 * Each count has one writer: enq_count ingress, deq_count the egress thread
 * of that port (simple_switch maps a port to one egress thread), so BMv2's
 * concurrent threads never lose an update; ingress reads deq_count while
 * egress writes it (at most one packet stale).  Declared at top level so
 * both controls share them.  The controller only reads them (p4sim; BMv2's
 * P4Runtime cannot read registers).
 */

/* index port*8 + queue: packets ingress handed to that queue (wraps) */
register<bit<32>>(PORT_QUEUE_CELLS) enq_count_reg;
/* index port*8 + queue: packets egress took out of that queue, advanced by
 * the clamp/resync corrections (wraps) */
register<bit<32>>(PORT_QUEUE_CELLS) deq_count_reg;
/* index port*8 + queue: that queue's depth after its last dequeue (packets).
 * Display only (controller stats); the drop rule uses the counts. */
register<qdepth_t>(PORT_QUEUE_CELLS) queue_depth_reg;
/* index port: deq_qdepth (whole port, all queues) of the last packet
 * dequeued on the port, and its time.  Display only (controller stats). */
register<qdepth_t>(PORT_CELLS) port_depth_reg;
register<bit<48>>(PORT_CELLS) port_depth_ts_reg;

/* Ingress, first half: the depth of the packet's (egress port, queue), into
 * meta.observed_depth; its cell index and enq count for QueueDepthCount. */
control QueueDepthRead(inout dlcp_metadata_t meta,
                       in standard_metadata_t standard_metadata,
                       out bit<32> cell,
                       out bit<32> enq) {
    apply {
        cell = ((bit<32>)standard_metadata.egress_spec << DLCP_QUEUE_SHIFT) + (bit<32>)meta.queue;
        bit<32> deq;
        enq_count_reg.read(enq, cell);
        deq_count_reg.read(deq, cell);
        bit<32> held = enq - deq;
        if (held > DLCP_COUNT_NEGATIVE) {
            held = 0;                       /* dequeued more than counted: a race, reads empty */
        }
        meta.observed_depth = (qdepth_t)held;
        if (held > 32w0x7FFFF) {
            meta.observed_depth = 19w0x7FFFF;   /* saturate at the bit<19> maximum */
        }
    }
}

/* Ingress, second half (after the drop rule): count the packet into its
 * queue unless it was dropped or the queue is full. */
control QueueDepthCount(in dlcp_metadata_t meta,
                        in standard_metadata_t standard_metadata,
                        in bit<32> cell,
                        in bit<32> enq) {
    apply {
        if (meta.drop == 0
                && standard_metadata.egress_spec != DLCP_V1MODEL_DROP_PORT
                && (bit<32>)meta.observed_depth < DLCP_QUEUE_CAPACITY_DEFAULT) {
            enq_count_reg.write(cell, enq + 1);
        }
    }
}

control QueueDepthRecord(inout dlcp_headers_t hdr,
                         inout dlcp_metadata_t meta,
                         inout standard_metadata_t standard_metadata) {

    /* index queue*16 + mag_class.  Tofino2's egress re-check of the ingress
     * decision; BMv2/p4sim decide at ingress on the exact count, so nothing
     * is counted here (kept: one P4Info for every target). */
    @name(".DlcpEgress.egress_safety_drops")
    counter(QUEUE_MAG_CELLS, CounterType.packets_and_bytes) egress_safety_drops;

    @name(".DlcpEgress.set_port_drain")
    action set_port_drain(bit<32> pkts_per_s) {
    }

    /* Installed by the controller, one entry per port whose rate it knows
     * (full-size packets per second).  API symmetry only, as on Tofino: the
     * depth is counted, so no target reads the rate any more. */
    @name(".DlcpEgress.port_drain")
    table port_drain {
        key = {
            standard_metadata.egress_port : exact @name("egress_port");
        }
        actions = {
            set_port_drain;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = PORT_DRAIN_SIZE;
    }

    /* deq_count of queue q of this port := its enq_count (the queue is empty) */
    #define DLCP_RESYNC_QUEUE(q) \
        enq_count_reg.read(resync_enq, port_base + q); \
        deq_count_reg.write(port_base + q, resync_enq);

    apply {
        port_drain.apply();
        bit<32> port_index = (bit<32>)standard_metadata.egress_port;
        bit<32> port_base = port_index << DLCP_QUEUE_SHIFT;
        bit<32> port_held = (bit<32>)standard_metadata.deq_qdepth;
        if (standard_metadata.instance_type == 0) {     /* NORMAL: ingress counted it */
            bit<32> cell = port_base + (bit<32>)meta.queue;
            bit<32> enq;
            bit<32> deq;
            enq_count_reg.read(enq, cell);
            deq_count_reg.read(deq, cell);
            deq = deq + 1;
            bit<32> held = enq - deq;
            if (held > DLCP_COUNT_NEGATIVE) {
                deq = enq;                  /* more out than counted in (a race): empty */
                held = 0;
            } else if (held > port_held) {
                deq = enq - port_held;      /* the TM dropped counted packets: the queue */
                held = port_held;           /* holds at most what the whole port holds */
            }
            deq_count_reg.write(cell, deq);
            queue_depth_reg.write(cell, (qdepth_t)held);
        }
        if (port_held == 0) {
            /* the port is empty: so is every queue of it */
            bit<32> resync_enq;
            DLCP_RESYNC_QUEUE(0)
            DLCP_RESYNC_QUEUE(1)
            DLCP_RESYNC_QUEUE(2)
            DLCP_RESYNC_QUEUE(3)
            DLCP_RESYNC_QUEUE(4)
            DLCP_RESYNC_QUEUE(5)
            DLCP_RESYNC_QUEUE(6)
            DLCP_RESYNC_QUEUE(7)
        }
        port_depth_reg.write(port_index, standard_metadata.deq_qdepth);
        port_depth_ts_reg.write(port_index, standard_metadata.egress_global_timestamp);
    }
}
