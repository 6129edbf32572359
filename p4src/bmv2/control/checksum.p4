/*
 * checksum.p4 (v1model) -- IPv4 header checksum.
 *
 * Why this file exists: a router must not forward an IPv4 header it cannot
 * trust, and it rewrites TTL, DSCP and ECN, so the checksum is verified on
 * the way in (a mismatch sets standard_metadata.checksum_error; validate.p4
 * drops the packet) and recomputed on the way out, both over the whole
 * header including its options (an absent options header adds nothing).  UDP/TCP checksums need
 * no update: none of the rewritten fields is in the pseudo-header.
 */

control DlcpVerifyChecksum(inout dlcp_headers_t hdr, inout dlcp_metadata_t meta) {
    apply {
        verify_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control DlcpComputeChecksum(inout dlcp_headers_t hdr, inout dlcp_metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}
