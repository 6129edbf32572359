/*
 * selective_drop.p4 (v1model) -- threshold-based early dropping of
 * low-magnitude gradient packets and ECN CE marking, at ingress.
 *
 * Why this file exists: under congestion the switch sheds the gradient
 * packets that matter least (small magnitudes) before they are queued, so
 * the important ones behind them finish sooner.  The queue depth used is
 * meta.observed_depth, the packets in the packet's (egress port, queue)
 * ahead of it, counted by queue_depth.p4 (QueueDepthRead) just before this
 * control runs.  The decision is taken once, at ingress, on that exact
 * count, as Tofino1 takes it once in egress on the TM's enq_qdepth (the
 * same quantity: the queue's depth when the packet joins it).
 */

control SelectiveDrop(inout dlcp_headers_t hdr,
                      inout dlcp_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    /* index queue*16 + mag_class */
    @name(".DlcpIngress.selective_drops")
    counter(QUEUE_MAG_CELLS, CounterType.packets_and_bytes) selective_drops;
    @name(".DlcpIngress.ecn_marks")
    counter(QUEUE_MAG_CELLS, CounterType.packets_and_bytes) ecn_marks;

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

    /* Keyless: its default action is the setting.  Installed by the
     * controller when it tunes the freshness of a recorded depth (a MODIFY of
     * the default entry).  API symmetry only, as on Tofino: the depth is a
     * count that egress resyncs when the port empties, never a timed record,
     * so the value is applied but unused. */
    @name(".DlcpIngress.depth_settings")
    table depth_settings {
        actions = {
            set_depth_max_age;
        }
        default_action = set_depth_max_age(DLCP_DEPTH_MAX_AGE_US_DEFAULT);
        size = 1;
    }

    /* Installed by the controller from the policy's per (queue, magnitude
     * class) thresholds and changed at run time when an operator tunes
     * them.  No entry = never drop, never mark. */
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

    apply {
        if (meta.is_dlcp == 1) {
            drop_thresholds.apply();
        }
        if (meta.has_thresholds == 1) {
            depth_settings.apply();     /* API symmetry; value unused */
            bit<32> class_index = ((bit<32>)meta.queue << DLCP_MAG_CLASS_SHIFT)
                                  + (bit<32>)meta.mag_class;
            if (meta.msg_type == DLCP_MSG_DATA
                    && (meta.flags & DLCP_FLAG_CRITICAL) == 0
                    && meta.observed_depth > meta.drop_depth) {
                meta.drop = 1;
                mark_to_drop(standard_metadata);
                selective_drops.count(class_index);
            } else if ((meta.flags & DLCP_FLAG_ECN_CAPABLE) != 0
                    && hdr.ipv4.ecn != ECN_NOT_ECT
                    && meta.observed_depth > meta.ecn_depth) {
                hdr.ipv4.ecn = ECN_CE;
                ecn_marks.count(class_index);
            }
        }
    }
}
