// Package bgp holds the decoders of the BGP stream: RIPE RIS Live JSON, MRT
// (BGP4MP updates and TABLE_DUMP_V2 RIB dumps) and BMP. Each applies what it
// decodes to the pipeline's routing table (package rib, directory bgp) and
// emits the per-origin announcement and withdrawal counts; the announced
// space gauges come from the table when a bucket closes. Wire formats are
// parsed with gobgp's packet libraries.
package bgp

import (
	"fmt"
	"net"
	"net/netip"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// Stream is the stream kind of every format here.
const Stream = "bgp"

// Format names, as used in ingest.Record.Format and ingest.RegisterFormat.
const (
	FormatRISLive = "rislive"
	FormatMRT     = "mrt"
	FormatBMP     = "bmp"
)

// sharedKey is the ingest.Env.Shared entry that holds the routing table, so
// that RIS Live, MRT and BMP inputs of one pipeline feed one table.
const sharedKey = "bgp.table"

func init() {
	// Announced space is sampled from the table as each bucket closes, so
	// updates must reach the table in event-time order against the watermark.
	ingest.RegisterOrdered(Stream)
	ingest.RegisterFormat(Stream, FormatRISLive, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewRISLive(SharedTable(env)), nil
	})
	ingest.RegisterFormat(Stream, FormatMRT, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewMRT(SharedTable(env), ""), nil
	})
	ingest.RegisterFormat(Stream, FormatBgpdump, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewBgpdump(SharedTable(env), ""), nil
	})
	ingest.RegisterFormat(Stream, FormatBMP, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewBMP(SharedTable(env), ""), nil
	})
}

// SharedTable returns the routing table of the pipeline env belongs to,
// creating it on first use: it then becomes env.Map's live origin source
// (unless one is set) and emits its space gauges, and the health of each
// collector's full-feed peers, before every bucket close.
func SharedTable(env *ingest.Env) *rib.Table {
	if env == nil {
		return rib.New(rib.Config{})
	}
	if t, ok := env.Shared[sharedKey].(*rib.Table); ok {
		return t
	}
	t := rib.New(rib.Config{Map: env.Map})
	if env.Shared == nil {
		env.Shared = map[string]any{}
	}
	env.Shared[sharedKey] = t
	if env.Map != nil && env.Map.Live == nil {
		env.Map.Live = t
	}
	if env.BeforeClose != nil {
		// The gauge is stamped with the bucket's last instant so that it
		// lands in the bucket about to close.
		env.BeforeClose(func(_, end int64, sink obs.Sink) {
			t.EmitSpace(end-1, sink)
			EmitPeerHealth(t, end, sink)
		})
	}
	return t
}

// Trace, when set on a decoder, sees every update before it is applied.
// Tests compare what was decoded against other tools with it.
type Trace func(peer rib.PeerKey, u *rib.Update)

// converter turns gobgp UPDATE messages into rib updates, reusing its
// buffers from one message to the next.
type converter struct {
	u        rib.Update
	as4      []uint32
	announce []netip.Prefix
	withdraw []netip.Prefix
}

// segments appends a flattened AS path and reports whether it ended in an
// AS_SET, and that set's size.
func appendSegments(dst []uint32, segs []gobgp.AsPathParamInterface) (out []uint32, lastSet int) {
	for _, s := range segs {
		n := len(dst)
		switch p := s.(type) {
		case *gobgp.As4PathParam:
			dst = append(dst, p.AS...)
		case *gobgp.AsPathParam:
			for _, a := range p.AS {
				dst = append(dst, uint32(a))
			}
		}
		lastSet = 0
		if s.GetType() == gobgp.BGP_ASPATH_ATTR_TYPE_SET {
			lastSet = len(dst) - n
		}
	}
	return dst, lastSet
}

func addrPrefix(ip net.IP, length uint8) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	p, err := a.Prefix(int(length))
	if err != nil {
		return netip.Prefix{}, false
	}
	return p, true
}

func appendNLRI(dst []netip.Prefix, nlri []gobgp.AddrPrefixInterface) []netip.Prefix {
	for _, n := range nlri {
		var p netip.Prefix
		var ok bool
		switch x := n.(type) {
		case *gobgp.IPAddrPrefix:
			p, ok = addrPrefix(x.Prefix, x.Length)
		case *gobgp.IPv6AddrPrefix:
			p, ok = addrPrefix(x.Prefix, x.Length)
		}
		if ok {
			dst = append(dst, p)
		}
	}
	return dst
}

// update fills c.u from a BGP UPDATE. IPv4 and IPv6 unicast NLRI are kept;
// other families (VPN, flowspec, EVPN) are not Internet routes and are
// dropped. A path with AS_TRANS and an AS4_PATH is merged as RFC 6793 says.
func (c *converter) update(m *gobgp.BGPUpdate, peer rib.PeerID, at int64) *rib.Update {
	u := &c.u
	*u = rib.Update{Peer: peer, Time: at, Path: u.Path[:0]}
	c.announce, c.withdraw, c.as4 = c.announce[:0], c.withdraw[:0], c.as4[:0]
	for _, w := range m.WithdrawnRoutes {
		if p, ok := addrPrefix(w.Prefix, w.Length); ok {
			c.withdraw = append(c.withdraw, p)
		}
	}
	for _, n := range m.NLRI {
		if p, ok := addrPrefix(n.Prefix, n.Length); ok {
			c.announce = append(c.announce, p)
		}
	}
	lastSet, as4Set := 0, 0
	hasAS4 := false
	for _, a := range m.PathAttributes {
		switch x := a.(type) {
		case *gobgp.PathAttributeAsPath:
			u.Path, lastSet = appendSegments(u.Path[:0], x.Value)
		case *gobgp.PathAttributeAs4Path:
			hasAS4 = true
			for _, s := range x.Value {
				c.as4 = append(c.as4, s.AS...)
				as4Set = 0
				if s.Type == gobgp.BGP_ASPATH_ATTR_TYPE_SET {
					as4Set = len(s.AS)
				}
			}
		case *gobgp.PathAttributeMpReachNLRI:
			c.announce = appendNLRI(c.announce, x.Value)
		case *gobgp.PathAttributeMpUnreachNLRI:
			c.withdraw = appendNLRI(c.withdraw, x.Value)
		}
	}
	if hasAS4 && len(c.as4) <= len(u.Path) {
		u.Path = append(u.Path[:len(u.Path)-len(c.as4)], c.as4...)
		lastSet = as4Set
	}
	switch {
	case len(u.Path) == 0 || lastSet > 1:
		u.Origin = 0
	default:
		u.Origin = u.Path[len(u.Path)-1]
	}
	u.Announced, u.Withdrawn = c.announce, c.withdraw
	return u
}

// guard turns a panic inside a wire parser (gobgp's decoders index slices
// they have not length-checked on some malformed inputs) into a decode
// error, so that one bad record never stops the stream.
func guard(err *error) {
	if r := recover(); r != nil {
		*err = ingest.Errorf("malformed", "parser panic: %v", r)
	}
}

func peerAddr(ip net.IP) (netip.Addr, error) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}, fmt.Errorf("peer address of %d bytes", len(ip))
	}
	return a.Unmap(), nil
}
