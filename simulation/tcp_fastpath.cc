// ns-3's TcpTxBuffer::NextSeg without its walk of the whole sent list when nothing can be lost.
//
// Why this exists: TcpSocketBase asks NextSeg (RFC 6675's NextSeg) for every segment it sends.
// ns-3 3.44's version first walks every segment in flight from SND.UNA looking for rule (1): the
// first segment that is neither retransmitted nor SACKed and is marked lost. With large windows
// (DCTCP's background flows at load 0.6 keep thousands of segments in flight: ECN, not loss, holds
// them, and the host FIFO never marks) that walk is O(window) per segment sent. A segment can only
// be marked lost when TcpTxBuffer's own count of lost bytes (m_lostOut) is not zero, and rule (3)
// is only looked for in recovery; so when m_lostOut is 0 and the caller is not in recovery, the
// walk cannot find anything, and the answer is that of rules (2)-(4), which do not read the list.
// This library, preloaded into each ns-3 run's process (simulation/fresh.py), takes ns-3's call
// (TcpSocketBase calls NextSeg through the PLT) and answers those calls by ns-3's own NextSeg run
// on an empty sent list (the list is moved aside and back: O(1)); every other call goes to ns-3's
// NextSeg unchanged. DLCP_SIM_TCP_FASTPATH_CHECK=1 also runs ns-3's NextSeg on the real list for
// every shortened call and aborts on any difference. simulation/tcp_fastpath.py builds it.
#include "ns3/tcp-tx-buffer.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace
{
using NextSegFn = bool (*)(const ns3::TcpTxBuffer*, ns3::SequenceNumber32*, ns3::SequenceNumber32*, bool);
const char* const kNextSeg = "_ZNK3ns311TcpTxBuffer7NextSegEPNS_14SequenceNumberIjiEES3_b";

NextSegFn
Stock()
{
    static NextSegFn fn = [] {
        void* lib = dlopen("libns3.44-internet.so", RTLD_LAZY | RTLD_NOLOAD);
        void* sym = lib ? dlsym(lib, kNextSeg) : nullptr;
        if (!sym)
        {
            std::fprintf(stderr, "tcp_fastpath: ns-3's TcpTxBuffer::NextSeg not found (%s)\n", dlerror());
            std::abort();
        }
        return reinterpret_cast<NextSegFn>(sym);
    }();
    return fn;
}

const bool kCheck = [] {
    const char* v = std::getenv("DLCP_SIM_TCP_FASTPATH_CHECK");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
}();
unsigned long long g_short = 0;
unsigned long long g_stock = 0;
} // namespace

extern "C" unsigned long long
dlcp_tcp_fastpath_calls(int shortened)
{
    return shortened ? g_short : g_stock;
}

namespace ns3
{
bool
TcpTxBuffer::NextSeg(SequenceNumber32* seq, SequenceNumber32* seqHigh, bool isRecovery) const
{
    if (isRecovery || m_lostOut != 0)
    {
        ++g_stock;
        return Stock()(this, seq, seqHigh, isRecovery);
    }
    ++g_short;
    auto& sent = const_cast<PacketList&>(m_sentList);
    PacketList aside;
    sent.swap(aside);
    bool found = Stock()(this, seq, seqHigh, false);
    sent.swap(aside);
    if (kCheck)
    {
        SequenceNumber32 s = *seq;
        SequenceNumber32 h = *seqHigh;
        bool stock = Stock()(this, &s, &h, false);
        if (stock != found || (found && (s != *seq || h != *seqHigh)))
        {
            std::fprintf(stderr, "tcp_fastpath: NextSeg differs from ns-3's (%d %u %u, ns-3 %d %u %u)\n", found,
                         seq->GetValue(), seqHigh->GetValue(), stock, s.GetValue(), h.GetValue());
            std::abort();
        }
    }
    return found;
}
} // namespace ns3
