/*
 * checksum.p4 (v1model) -- IPv4 header checksum.
 *
 * Why this file exists: routing rewrites TTL, DSCP and ECN, so the IPv4
 * header checksum is recomputed on the way out.  Incoming checksums are not
 * verified (like most hardware fast paths); UDP/TCP checksums need no
 * update because none of the rewritten fields is in the pseudo-header.
 */

control DlcpVerifyChecksum(inout dlcp_headers_t hdr, inout dlcp_metadata_t meta) {
    apply { }
}

control DlcpComputeChecksum(inout dlcp_headers_t hdr, inout dlcp_metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}
