package bgp

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/mrt"
)

// UpdateSpec describes one BGP UPDATE for the encoders, which the fixture
// renderer and tests use to produce the same wire formats collectors emit.
type UpdateSpec struct {
	Time      int64  // event time, Unix ns
	Collector string // RIS Live "host", e.g. "rrc21"
	Peer      netip.Addr
	PeerAS    uint32
	// LocalAS and LocalAddr are the collector's side of the session in MRT
	// (defaults: AS 12654, the unspecified address of the peer's family).
	LocalAS   uint32
	LocalAddr netip.Addr
	Path      []uint32   // AS path, neighbour first
	NextHop   netip.Addr // default: Peer
	Announced []netip.Prefix
	Withdrawn []netip.Prefix
}

// bgpUpdate builds the UPDATE with gobgp's types: IPv4 prefixes in the
// classic fields, IPv6 in MP_REACH/MP_UNREACH, a 4-octet AS path.
func (s *UpdateSpec) bgpUpdate() (*gobgp.BGPMessage, error) {
	nh := s.NextHop
	if !nh.IsValid() {
		nh = s.Peer
	}
	var w4, a4 []*gobgp.IPAddrPrefix
	var w6, a6 []gobgp.AddrPrefixInterface
	for _, p := range s.Withdrawn {
		p = p.Masked()
		if p.Addr().Is4() {
			w4 = append(w4, gobgp.NewIPAddrPrefix(uint8(p.Bits()), p.Addr().String()))
		} else {
			w6 = append(w6, gobgp.NewIPv6AddrPrefix(uint8(p.Bits()), p.Addr().String()))
		}
	}
	for _, p := range s.Announced {
		p = p.Masked()
		if p.Addr().Is4() {
			a4 = append(a4, gobgp.NewIPAddrPrefix(uint8(p.Bits()), p.Addr().String()))
		} else {
			a6 = append(a6, gobgp.NewIPv6AddrPrefix(uint8(p.Bits()), p.Addr().String()))
		}
	}
	var attrs []gobgp.PathAttributeInterface
	if len(a4)+len(a6) > 0 {
		attrs = append(attrs,
			gobgp.NewPathAttributeOrigin(gobgp.BGP_ORIGIN_ATTR_TYPE_IGP),
			gobgp.NewPathAttributeAsPath([]gobgp.AsPathParamInterface{gobgp.NewAs4PathParam(gobgp.BGP_ASPATH_ATTR_TYPE_SEQ, append([]uint32(nil), s.Path...))}))
		if len(a4) > 0 {
			if !nh.Is4() {
				return nil, fmt.Errorf("IPv4 announcement with next hop %s", nh)
			}
			attrs = append(attrs, gobgp.NewPathAttributeNextHop(nh.String()))
		}
		if len(a6) > 0 {
			nh6 := nh
			if nh6.Is4() {
				nh6 = netip.AddrFrom16(nh.As16()) // IPv4-mapped, as RIS peers over IPv4 send
			}
			attrs = append(attrs, gobgp.NewPathAttributeMpReachNLRI(nh6.String(), a6))
		}
	}
	if len(w6) > 0 {
		attrs = append(attrs, gobgp.NewPathAttributeMpUnreachNLRI(w6))
	}
	return gobgp.NewBGPUpdateMessage(w4, attrs, a4), nil
}

// EncodeMRTUpdate returns one MRT record of type BGP4MP, subtype
// MESSAGE_AS4, carrying the update. An update too large for one BGP message
// (4,096 bytes) is an error: split it.
func EncodeMRTUpdate(s *UpdateSpec) ([]byte, error) {
	msg, err := s.bgpUpdate()
	if err != nil {
		return nil, err
	}
	local := s.LocalAddr
	if !local.IsValid() {
		local = netip.IPv4Unspecified()
		if s.Peer.Is6() {
			local = netip.IPv6Unspecified()
		}
	}
	if local.Is4() != s.Peer.Is4() {
		return nil, fmt.Errorf("MRT update: peer %s and local %s differ in family", s.Peer, local)
	}
	las := s.LocalAS
	if las == 0 {
		las = 12654
	}
	body := mrt.NewBGP4MPMessage(s.PeerAS, las, 0, s.Peer.String(), local.String(), true, msg)
	if body.BGP4MPHeader == nil {
		return nil, fmt.Errorf("MRT update: peer address %s", s.Peer)
	}
	m, err := mrt.NewMRTMessage(uint32(s.Time/1e9), mrt.BGP4MP, mrt.MESSAGE_AS4, body)
	if err != nil {
		return nil, err
	}
	b, err := m.Serialize()
	if err != nil {
		return nil, fmt.Errorf("MRT update: %w", err)
	}
	return b, nil
}

type risOut struct {
	Type string      `json:"type"`
	Data risDataJSON `json:"data"`
}

type risDataJSON struct {
	Timestamp     json.Number       `json:"timestamp"`
	Peer          string            `json:"peer"`
	PeerASN       string            `json:"peer_asn"`
	ID            string            `json:"id"`
	Raw           string            `json:"raw"`
	Host          string            `json:"host"`
	Type          string            `json:"type"`
	Path          []uint32          `json:"path"`
	Origin        string            `json:"origin,omitempty"`
	Announcements []risAnnouncement `json:"announcements,omitempty"`
	Withdrawals   []string          `json:"withdrawals,omitempty"`
}

// EncodeRISLive returns a RIS Live ris_message line (without newline) for
// the update, shaped as RIS Live sends it: peer_asn as a string, the raw
// BGP message in upper-case hex, announcements grouped under one next hop.
func EncodeRISLive(s *UpdateSpec) ([]byte, error) {
	msg, err := s.bgpUpdate()
	if err != nil {
		return nil, err
	}
	raw, err := msg.Serialize()
	if err != nil {
		return nil, fmt.Errorf("RIS Live update: %w", err)
	}
	// RIS Live stamps to the hundredth of a second.
	cs := s.Time / 1e7
	ts := fmt.Sprintf("%d.%02d", cs/100, cs%100)
	d := risDataJSON{
		Timestamp: json.Number(ts),
		Peer:      s.Peer.String(),
		PeerASN:   strconv.FormatUint(uint64(s.PeerAS), 10),
		ID:        s.Peer.String() + "-" + ts,
		Raw:       strings.ToUpper(hex.EncodeToString(raw)),
		Host:      s.Collector,
		Type:      "UPDATE",
		Path:      append([]uint32{}, s.Path...),
	}
	if len(s.Announced) > 0 {
		d.Origin = "igp"
		nh := s.NextHop
		if !nh.IsValid() {
			nh = s.Peer
		}
		a := risAnnouncement{NextHop: nh.String()}
		for _, p := range s.Announced {
			a.Prefixes = append(a.Prefixes, p.Masked().String())
		}
		d.Announcements = []risAnnouncement{a}
	}
	for _, p := range s.Withdrawn {
		d.Withdrawals = append(d.Withdrawals, p.Masked().String())
	}
	return json.Marshal(risOut{Type: "ris_message", Data: d})
}
