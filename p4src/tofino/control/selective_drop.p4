/*
 * selective_drop.p4 (TNA) -- threshold-based early dropping of low-magnitude
 * gradient packets and ECN CE marking.  Same table, action and counter
 * names as p4src/bmv2/control/selective_drop.p4.
 *
 * Why this file exists: the rule (docs/dataplane.md) is the same on every
 * target; where it runs is not:
 *  - Tofino2: at ingress, against the ghost-thread depth of the target
 *    queue (true early drop, before the packet takes buffer), with the
 *    egress safety check against enq_qdepth;
 *  - Tofino1: ingress cannot see queue depth, so the whole rule runs in
 *    egress against enq_qdepth (the packet has already waited in the queue,
 *    but it never takes link capacity from the packets behind it).
 * drop_thresholds is looked up in ingress on both and its result bridged.
 */

control SelectiveDrop(inout dlcp_tna_headers_t hdr,
                      inout dlcp_metadata_t meta,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    @name(".DlcpIngress.set_thresholds")
    action set_thresholds(qdepth_t drop_depth, qdepth_t ecn_depth) {
        meta.has_thresholds = 1;
        meta.drop_depth = drop_depth;
        meta.ecn_depth = ecn_depth;
    }

    @name(".DlcpIngress.set_depth_max_age")
    action set_depth_max_age(bit<32> max_age_us) {
        meta.depth_max_age_us = max_age_us;
    }

    /* Same table as on BMv2 (installed by the controller when it tunes the
     * freshness of a recorded depth), kept for API symmetry: on Tofino the
     * depth is never a stale record (Tofino2's ghost thread reports every
     * queue's length continuously; Tofino1 checks enq_qdepth in egress), so
     * the value is applied but unused. */
    @name(".DlcpIngress.depth_settings")
    table depth_settings {
        actions = {
            set_depth_max_age;
        }
        default_action = set_depth_max_age(DLCP_DEPTH_MAX_AGE_US_DEFAULT);
        size = 1;
    }

    /* Installed by the controller from the policy's per (queue, magnitude
     * class) thresholds; changed at run time by operators.  No entry =
     * never drop, never mark. */
    @name(".DlcpIngress.drop_thresholds")
    table drop_thresholds {
        key = {
            meta.queue     : exact @name("queue");
            meta.mag_class : exact @name("mag_class");
        }
        actions = {
            set_thresholds;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = DROP_THRESHOLDS_SIZE;
    }

#if __TARGET_TOFINO__ == 2
    @name(".DlcpIngress.selective_drops")
    Counter<bit<64>, bit<7>>(QUEUE_MAG_CELLS, CounterType_t.PACKETS_AND_BYTES) selective_drops;
    @name(".DlcpIngress.ecn_marks")
    Counter<bit<64>, bit<7>>(QUEUE_MAG_CELLS, CounterType_t.PACKETS_AND_BYTES) ecn_marks;

    bit<11> ghost_qid;

    RegisterAction<bit<32>, bit<11>, bit<32>>(ghost_qdepth) read_depth = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };

    action set_ghost_queue_base(bit<11> base) {
        ghost_qid = base + (bit<11>)meta.queue;
    }

    /* Tofino2 only.  Installed by the controller (Tofino deployments) from
     * the TM's port -> physical queue mapping: the ghost thread reports
     * physical queue ids, ingress knows (port, queue). */
    @name(".DlcpIngress.ghost_queue_base")
    table ghost_queue_base {
        key = {
            ig_tm_md.ucast_egress_port : exact @name("egress_port");
        }
        actions = {
            set_ghost_queue_base;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = 512;
    }
#endif

    apply {
        if (meta.is_dlcp == 1) {
            drop_thresholds.apply();
        }
        depth_settings.apply();     /* API symmetry with BMv2; value unused */
#if __TARGET_TOFINO__ == 2
        if (meta.has_thresholds == 1) {
            if (ghost_queue_base.apply().hit) {
                meta.observed_depth = (qdepth_t)read_depth.execute(ghost_qid);
                if (meta.msg_type == DLCP_MSG_DATA
                        && (meta.flags & DLCP_FLAG_CRITICAL) == 0
                        && meta.observed_depth > meta.drop_depth) {
                    meta.drop = 1;
                    ig_dprsr_md.drop_ctl = 1;
                    selective_drops.count(meta.queue ++ meta.mag_class);
                } else if ((meta.flags & DLCP_FLAG_ECN_CAPABLE) != 0
                        && hdr.ipv4.ecn != ECN_NOT_ECT
                        && meta.observed_depth > meta.ecn_depth) {
                    hdr.ipv4.ecn = ECN_CE;
                    ecn_marks.count(meta.queue ++ meta.mag_class);
                }
            }
        }
#endif
    }
}

/* Egress half: Tofino1's only check, Tofino2's safety net. */
control EgressSelectiveDrop(inout dlcp_tna_headers_t hdr,
                            in egress_intrinsic_metadata_t eg_intr_md,
                            inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {

    @name(".DlcpEgress.egress_safety_drops")
    Counter<bit<64>, bit<7>>(QUEUE_MAG_CELLS, CounterType_t.PACKETS_AND_BYTES) egress_safety_drops;
#if __TARGET_TOFINO__ != 2
    @name(".DlcpIngress.selective_drops")
    Counter<bit<64>, bit<7>>(QUEUE_MAG_CELLS, CounterType_t.PACKETS_AND_BYTES) selective_drops;
    @name(".DlcpIngress.ecn_marks")
    Counter<bit<64>, bit<7>>(QUEUE_MAG_CELLS, CounterType_t.PACKETS_AND_BYTES) ecn_marks;
#endif

    apply {
        bit<7> class_index = hdr.bridged_md.queue ++ hdr.bridged_md.mag_class;
        if (hdr.bridged_md.has_thresholds == 1) {
            if (hdr.bridged_md.msg_type == DLCP_MSG_DATA
                    && (hdr.bridged_md.flags & DLCP_FLAG_CRITICAL) == 0
                    && eg_intr_md.enq_qdepth > hdr.bridged_md.drop_depth) {
                eg_dprsr_md.drop_ctl = 1;
#if __TARGET_TOFINO__ == 2
                egress_safety_drops.count(class_index);
#else
                selective_drops.count(class_index);
#endif
            }
#if __TARGET_TOFINO__ != 2
            else if ((hdr.bridged_md.flags & DLCP_FLAG_ECN_CAPABLE) != 0
                    && hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT
                    && eg_intr_md.enq_qdepth > hdr.bridged_md.ecn_depth) {
                hdr.ipv4.ecn = ECN_CE;
                ecn_marks.count(class_index);
            }
#endif
        }
    }
}
