// ns-3's TcpTxBuffer without two walks of the whole sent list: NextSeg's when nothing can be lost,
// and the retransmission's search for the segment to resend.
//
// Why this exists: DCTCP at paper-144, load 0.6 keeps thousands of segments in flight per
// background flow (ECN, not loss, holds them; the host FIFO never marks), and ns-3 3.44 walks them:
//
// 1. NextSeg (RFC 6675), asked for every segment sent, first walks every segment in flight from
//    SND.UNA looking for rule (1): the first segment that is neither retransmitted nor SACKed and is
//    marked lost. A segment can only be marked lost when TcpTxBuffer's count of lost bytes (m_lostOut)
//    is not zero, and rule (3) is only looked for in recovery; so when m_lostOut is 0 and the caller
//    is not in recovery the walk cannot find anything, and the answer is that of rules (2)-(4), which
//    do not read the list. Those calls are answered by ns-3's own NextSeg run on an empty sent list
//    (the list is moved aside and back: O(1)); every other call goes to ns-3's NextSeg unchanged.
// 2. A retransmission (CopyFromSequence of bytes already sent -> GetTransmittedSegment ->
//    GetPacketFromList) walks the sent list from SND.UNA to the segment, once to find it and again
//    (recursively, after each split or merge) to cut it out; the wheel's ns-3 is built with asserts,
//    and GetPacketFromList's assert compares the list with m_sentList element by element at every
//    step, so each retransmission costs O(window^2). Here an index per TcpTxBuffer (sequence number
//    of each sent item -> its list node) finds the item; the few items the retransmission can touch
//    (the one holding seq, those up to seq + size, and one more) are spliced out into a short list,
//    ns-3's own GetPacketFromList cuts the segment out of that list (same splits, merges and items),
//    and they are spliced back (list nodes and iterators, m_highestSack's too, are kept). The choice
//    of the size to cut and the retransmission count are those of GetTransmittedSegment. New data,
//    the partial case (part sent, part new) and every other call go to ns-3 unchanged; the index is
//    kept in step after each call that changes the sent list (CopyFromSequence, DiscardUpTo,
//    ResetLastSegmentSent), checked in O(1) at each of those calls (size, first and last node, first
//    sequence number) and rebuilt with one walk when it does not match (e.g. a new buffer at the
//    address of a freed one).
//
// This library, preloaded into each ns-3 run's process (simulation/fresh.py), takes ns-3's calls
// (TcpSocketBase calls these TcpTxBuffer members through the PLT). DLCP_SIM_TCP_FASTPATH=nextseg keeps
// cut 1 only. DLCP_SIM_TCP_FASTPATH_CHECK=1 also: runs ns-3's NextSeg on the real list for every
// shortened call; runs ns-3's GetTransmittedSegment on a deep copy of the buffer for every indexed
// retransmission and compares the whole sent list, the counters and the item returned; checks the
// index against a walk of the list at every call; and aborts on any difference.
// simulation/tcp_fastpath.py builds it.
#include "ns3/simulator.h"
#include "ns3/tcp-tx-buffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <dlfcn.h>
#include <iterator>
#include <list>
#include <map>
#include <unordered_map>

namespace
{
using Item = ns3::TcpTxItem;
using List = std::list<Item*>;
using Seq = ns3::SequenceNumber32;

void*
Symbol(const char* name)
{
    void* lib = dlopen("libns3.44-internet.so", RTLD_LAZY | RTLD_NOLOAD);
    void* sym = lib ? dlsym(lib, name) : nullptr;
    if (!sym)
    {
        std::fprintf(stderr, "tcp_fastpath: ns-3's %s not found (%s)\n", name, dlerror());
        std::abort();
    }
    return sym;
}

template <typename Fn>
Fn
Stock(const char* name)
{
    return reinterpret_cast<Fn>(Symbol(name));
}

using NextSegFn = bool (*)(const ns3::TcpTxBuffer*, Seq*, Seq*, bool);
using CopyFn = Item* (*)(ns3::TcpTxBuffer*, uint32_t, const Seq&);
using DiscardFn = void (*)(ns3::TcpTxBuffer*, const Seq&, const ns3::Callback<void, Item*>&);
using ResetLastFn = void (*)(ns3::TcpTxBuffer*);
using FromListFn = Item* (*)(const ns3::TcpTxBuffer*, List&, const Seq&, uint32_t, const Seq&, bool*);
using TransmittedFn = Item* (*)(ns3::TcpTxBuffer*, uint32_t, const Seq&);

#define DLCP_STOCK(var, type, mangled)                                                             \
    type var()                                                                                     \
    {                                                                                              \
        static type fn = Stock<type>(mangled);                                                     \
        return fn;                                                                                 \
    }
DLCP_STOCK(StockNextSeg, NextSegFn, "_ZNK3ns311TcpTxBuffer7NextSegEPNS_14SequenceNumberIjiEES3_b")
DLCP_STOCK(StockCopy, CopyFn, "_ZN3ns311TcpTxBuffer16CopyFromSequenceEjRKNS_14SequenceNumberIjiEE")
DLCP_STOCK(StockDiscard,
           DiscardFn,
           "_ZN3ns311TcpTxBuffer11DiscardUpToERKNS_14SequenceNumberIjiEERKNS_8CallbackIvJPNS_9TcpTxItemEEEE")
DLCP_STOCK(StockResetLast, ResetLastFn, "_ZN3ns311TcpTxBuffer20ResetLastSegmentSentEv")
DLCP_STOCK(StockFromList,
           FromListFn,
           "_ZNK3ns311TcpTxBuffer17GetPacketFromListERNSt7__cxx114listIPNS_9TcpTxItemESaIS4_EEERKNS_"
           "14SequenceNumberIjiEEjSB_Pb")
DLCP_STOCK(StockTransmitted,
           TransmittedFn,
           "_ZN3ns311TcpTxBuffer21GetTransmittedSegmentEjRKNS_14SequenceNumberIjiEE")
#undef DLCP_STOCK

bool
EnvFlag(const char* name)
{
    const char* v = std::getenv(name);
    return v != nullptr && v[0] != '\0' && v[0] != '0';
}

const bool kCheck = EnvFlag("DLCP_SIM_TCP_FASTPATH_CHECK");
const bool kRetx = [] {
    const char* v = std::getenv("DLCP_SIM_TCP_FASTPATH");
    return v == nullptr || strcasecmp(v, "nextseg") != 0;
}();

unsigned long long g_short = 0;    // NextSeg calls answered without the walk
unsigned long long g_stock = 0;    // NextSeg calls passed to ns-3
unsigned long long g_indexed = 0;  // retransmissions cut out through the index
unsigned long long g_rebuilds = 0; // index of a non-empty list rebuilt by a walk (it did not match)

// The index of one TcpTxBuffer's sent list: the sequence number each item starts at (SND.UNA plus
// the sizes of the items before it, as ns-3's walks count) -> the item's list node.
struct Index
{
    std::map<Seq, List::iterator> at;
    bool stale = true;
};

std::unordered_map<const void*, Index> g_index;

[[noreturn]] void
Fail(const char* what, unsigned a, unsigned b)
{
    std::fprintf(stderr, "tcp_fastpath: %s (%u, %u)\n", what, a, b);
    std::abort();
}
} // namespace

extern "C" unsigned long long
dlcp_tcp_fastpath_calls(int which)
{
    switch (which)
    {
    case 0:
        return g_stock;
    case 1:
        return g_short;
    case 2:
        return g_indexed;
    case 3:
        return g_rebuilds;
    default:
        return kRetx ? 1 : 0;
    }
}

namespace ns3
{
bool
TcpTxBuffer::NextSeg(SequenceNumber32* seq, SequenceNumber32* seqHigh, bool isRecovery) const
{
    if (isRecovery || m_lostOut != 0)
    {
        ++g_stock;
        return StockNextSeg()(this, seq, seqHigh, isRecovery);
    }
    ++g_short;
    auto& sent = const_cast<PacketList&>(m_sentList);
    PacketList aside;
    sent.swap(aside);
    bool found = StockNextSeg()(this, seq, seqHigh, false);
    sent.swap(aside);
    if (kCheck)
    {
        SequenceNumber32 s = *seq;
        SequenceNumber32 h = *seqHigh;
        bool stock = StockNextSeg()(this, &s, &h, false);
        if (stock != found || (found && (s != *seq || h != *seqHigh)))
        {
            std::fprintf(stderr, "tcp_fastpath: NextSeg differs from ns-3's (%d %u %u, ns-3 %d %u %u)\n", found,
                         seq->GetValue(), seqHigh->GetValue(), stock, s.GetValue(), h.GetValue());
            std::abort();
        }
    }
    return found;
}

// The sent list's index, valid for the list as it is now: kept if the O(1) checks pass (and, with
// the check on, a walk agrees), else rebuilt by one walk.
static Index&
IndexFor(const void* buffer, List& sent, SequenceNumber32 head, uint32_t (*size)(const TcpTxItem*))
{
    Index& ix = g_index[buffer];
    bool ok = !ix.stale && ix.at.size() == sent.size() &&
              (sent.empty() || (ix.at.begin()->first == head && ix.at.begin()->second == sent.begin() &&
                                std::prev(ix.at.end())->second == std::prev(sent.end())));
    if (ok && kCheck)
    {
        SequenceNumber32 pos = head;
        auto e = ix.at.begin();
        for (auto it = sent.begin(); it != sent.end(); ++it, ++e)
        {
            if (e->first != pos || e->second != it)
            {
                Fail("the index does not match the sent list at (seq, index seq)", pos.GetValue(), e->first.GetValue());
            }
            pos += size(*it);
        }
    }
    if (!ok)
    {
        g_rebuilds += sent.empty() ? 0 : 1;
        ix.at.clear();
        SequenceNumber32 pos = head;
        for (auto it = sent.begin(); it != sent.end(); ++it)
        {
            ix.at.emplace_hint(ix.at.end(), pos, it);
            pos += size(*it);
        }
        ix.stale = false;
    }
    return ix;
}

TcpTxItem*
TcpTxBuffer::CopyFromSequence(uint32_t numBytes, const SequenceNumber32& seq)
{
    if (!kRetx || m_firstByteSeq > seq)
    {
        return StockCopy()(this, numBytes, seq); // (ns-3 aborts on the second)
    }
    auto size = [](const TcpTxItem* item) -> uint32_t { return item->m_packet->GetSize(); };
    Index& ix = IndexFor(this, m_sentList, m_firstByteSeq, size);
    uint32_t s = std::min(numBytes, SizeFromSequence(seq));
    SequenceNumber32 sentEnd = m_firstByteSeq + m_sentSize;
    if (s == 0 || !(sentEnd >= seq + s))
    {
        // Nothing, new data (GetNewSegment appends one item) or part sent, part new: ns-3's own.
        size_t before = m_sentList.size();
        TcpTxItem* item = StockCopy()(this, numBytes, seq);
        if (m_sentList.size() == before + 1 && item == m_sentList.back() && !(sentEnd > seq))
        {
            ix.at.emplace_hint(ix.at.end(), sentEnd, std::prev(m_sentList.end()));
        }
        else if (m_sentList.size() != before || item != nullptr)
        {
            ix.stale = true;
        }
        return item;
    }

    // A retransmission: GetTransmittedSegment's choice of size, without its walks.
    Ptr<TcpTxBuffer> twin;
    if (kCheck)
    {
        // (built by ns-3's constructor: a copy constructor here would need the class's vtable,
        // which is not there when this library is preloaded)
        twin = Ptr<TcpTxBuffer>(new TcpTxBuffer(0), false);
        for (TcpTxItem* item : m_sentList)
        {
            auto* c = new TcpTxItem(*item);
            c->m_packet = item->m_packet->Copy();
            twin->m_sentList.push_back(c);
        }
        twin->m_maxBuffer = m_maxBuffer;
        twin->m_size = m_size;
        twin->m_sentSize = m_sentSize;
        twin->m_firstByteSeq = m_firstByteSeq.Get();
        twin->m_highestSack = std::make_pair(twin->m_sentList.end(), m_highestSack.second);
        twin->m_lostOut = m_lostOut;
        twin->m_sackedOut = m_sackedOut;
        twin->m_retrans = m_retrans;
        twin->m_dupAckThresh = m_dupAckThresh;
        twin->m_segmentSize = m_segmentSize;
        twin->m_renoSack = m_renoSack;
        twin->m_sackEnabled = m_sackEnabled;
        twin->m_sackSeen = m_sackSeen;
        for (auto a = m_sentList.begin(), b = twin->m_sentList.begin(); a != m_sentList.end(); ++a, ++b)
        {
            if (a == m_highestSack.first)
            {
                twin->m_highestSack.first = b;
            }
        }
    }
    auto hit = std::prev(ix.at.upper_bound(seq));
    uint32_t want = s;
    if (hit->first == seq)
    {
        TcpTxItem* cur = *hit->second;
        auto next = std::next(hit->second);
        if (next != m_sentList.end() && !(*next)->m_sacked && cur->m_lost == (*next)->m_lost)
        {
            want = std::min(want, size(cur) + size(*next));
        }
        else
        {
            want = std::min(want, size(cur));
        }
    }
    SequenceNumber32 start = hit->first;
    SequenceNumber32 pos = start;
    auto first = hit->second;
    auto last = first;
    size_t k = 0;
    while (last != m_sentList.end() && pos < seq + want)
    {
        pos += size(*last);
        ++last;
        ++k;
    }
    if (last != m_sentList.end())
    {
        ++last;
        ++k;
    }
    auto after = ix.at.erase(hit, std::next(hit, static_cast<long>(k)));
    PacketList region;
    region.splice(region.end(), m_sentList, first, last);
    bool edited = false;
    TcpTxItem* item = StockFromList()(this, region, start, want, seq, &edited);
    pos = start;
    for (auto it = region.begin(); it != region.end(); ++it)
    {
        ix.at.emplace_hint(after, pos, it);
        pos += size(*it);
    }
    m_sentList.splice(last, region);
    if (!item->m_retrans)
    {
        m_retrans += size(item);
        item->m_retrans = true;
    }
    ++g_indexed;

    if (kCheck)
    {
        TcpTxItem* theirs = StockTransmitted()(PeekPointer(twin), s, seq);
        if (twin->m_sentList.size() != m_sentList.size() || twin->m_retrans != m_retrans ||
            twin->m_sentSize != m_sentSize || twin->m_lostOut != m_lostOut || twin->m_sackedOut != m_sackedOut)
        {
            Fail("a retransmission's sent list or counters differ from ns-3's (items, ns-3's items)",
                 static_cast<unsigned>(m_sentList.size()), static_cast<unsigned>(twin->m_sentList.size()));
        }
        auto b = twin->m_sentList.begin();
        for (auto a = m_sentList.begin(); a != m_sentList.end(); ++a, ++b)
        {
            const TcpTxItem* x = *a;
            const TcpTxItem* y = *b;
            if (size(x) != size(y) || x->m_startSeq != y->m_startSeq || x->m_sacked != y->m_sacked ||
                x->m_lost != y->m_lost || x->m_retrans != y->m_retrans || x->m_lastSent != y->m_lastSent ||
                x->m_packet->GetUid() != y->m_packet->GetUid() || (x == item) != (y == theirs) ||
                (a == m_highestSack.first) != (b == twin->m_highestSack.first))
            {
                Fail("a retransmission's item differs from ns-3's (seq, ns-3's seq)", x->m_startSeq.GetValue(),
                     y->m_startSeq.GetValue());
            }
        }
        IndexFor(this, m_sentList, m_firstByteSeq, size);
    }
    item->m_lastSent = Simulator::Now();
    return item;
}

void
TcpTxBuffer::DiscardUpTo(const SequenceNumber32& seq, const Callback<void, TcpTxItem*>& beforeDelCb)
{
    if (!kRetx)
    {
        StockDiscard()(this, seq, beforeDelCb);
        return;
    }
    auto size = [](const TcpTxItem* item) -> uint32_t { return item->m_packet->GetSize(); };
    Index& ix = IndexFor(this, m_sentList, m_firstByteSeq, size);
    StockDiscard()(this, seq, beforeDelCb);
    // ns-3 removed items from the front and may have cut the first one left: it now starts at SND.UNA.
    SequenceNumber32 head = m_firstByteSeq;
    while (!ix.at.empty() && ix.at.begin()->first < head)
    {
        ix.at.erase(ix.at.begin());
    }
    if (!m_sentList.empty() && (ix.at.empty() || ix.at.begin()->first != head))
    {
        ix.at.emplace_hint(ix.at.begin(), head, m_sentList.begin());
    }
    if (kCheck)
    {
        IndexFor(this, m_sentList, m_firstByteSeq, size);
    }
}

void
TcpTxBuffer::ResetLastSegmentSent()
{
    if (!kRetx)
    {
        StockResetLast()(this);
        return;
    }
    auto size = [](const TcpTxItem* item) -> uint32_t { return item->m_packet->GetSize(); };
    Index& ix = IndexFor(this, m_sentList, m_firstByteSeq, size);
    size_t before = m_sentList.size();
    StockResetLast()(this);
    if (m_sentList.size() + 1 == before && !ix.at.empty())
    {
        ix.at.erase(std::prev(ix.at.end()));
    }
    else if (m_sentList.size() != before)
    {
        ix.stale = true;
    }
}
} // namespace ns3
