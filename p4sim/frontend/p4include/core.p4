/* p4sim's declaration of the P4_16 core library (same API as p4c's p4include/core.p4).
 * Written for p4sim: the names, types and parameter directions follow the P4_16 specification
 * so that programs written for p4c compile unchanged. */

#ifndef _CORE_P4_
#define _CORE_P4_

/// Standard error codes. New error codes can be declared by programs.
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    /// Read a header from the packet into a fixed-size header and advance the cursor.
    void extract<T>(out T hdr);
    /// Read a header with one varbit field of the given size in bits.
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /// Read bits from the packet without advancing the cursor.
    T lookahead<T>();
    /// Advance the packet cursor by the given number of bits.
    void advance(in bit<32> sizeInBits);
    /// Packet length in bytes.
    bit<32> length();
}

extern packet_out {
    /// Write a header (or every header of a struct/stack/union) to the output packet if valid.
    void emit<T>(in T hdr);
}

/// Check a predicate in a parser; on failure transition to reject with the given error.
extern void verify(in bool check, in error toSignal);

/// Built-in action that does nothing.
@noWarn("unused")
action NoAction() {}

/// Standard match kinds for table keys.
match_kind {
    exact,
    ternary,
    lpm
}

/// Compile-time assertions.
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
