package bgp

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/mrt"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// MRT decodes MRT records (RFC 6396), one record per call: BGP4MP and
// BGP4MP_ET updates and state changes, and TABLE_DUMP_V2 RIB dumps. A RIB
// dump's PEER_INDEX_TABLE is remembered for the RIB records that follow it,
// which is why one decoder must see a dump's records in order.
type MRT struct {
	Table *rib.Table
	// Collector names the collector the records come from (an MRT record
	// does not say); it is part of every peer's key.
	Collector string
	// Trace, when set, sees every update before it is applied.
	Trace Trace

	peerIndex []rib.PeerID
	conv      converter
	one       [1]netip.Prefix
	addPath   []*gobgp.MarshallingOption
}

// NewMRT returns an MRT decoder feeding t.
func NewMRT(t *rib.Table, collector string) *MRT {
	return &MRT{
		Table:     t,
		Collector: collector,
		addPath: []*gobgp.MarshallingOption{{AddPath: map[gobgp.RouteFamily]gobgp.BGPAddPathMode{
			gobgp.RF_IPv4_UC: gobgp.BGP_ADD_PATH_RECEIVE, gobgp.RF_IPv6_UC: gobgp.BGP_ADD_PATH_RECEIVE,
		}}},
	}
}

// maxMRTRecord bounds a record's length; a RIB record for one prefix with
// a thousand peers is well under this, a corrupt length field is not.
const maxMRTRecord = 16 << 20

// MRTTime returns the event time (Unix ns) of an MRT record: the header's
// seconds plus, for the _ET types, its microseconds.
func MRTTime(rec []byte) (int64, error) {
	if len(rec) < mrt.MRT_COMMON_HEADER_LEN {
		return 0, ingest.Errorf("truncated", "MRT header of %d bytes", len(rec))
	}
	ts := int64(binary.BigEndian.Uint32(rec)) * 1e9
	t := mrt.MRTType(binary.BigEndian.Uint16(rec[4:]))
	if (t == mrt.BGP4MP_ET || t == mrt.ISIS_ET || t == mrt.OSPFv3_ET) && len(rec) >= mrt.MRT_COMMON_HEADER_LEN+4 {
		ts += int64(binary.BigEndian.Uint32(rec[12:])) * 1e3
	}
	return ts, nil
}

// Decode applies one MRT record.
func (d *MRT) Decode(value []byte, sink obs.Sink) (err error) {
	defer guard(&err)
	var h mrt.MRTHeader
	if err := h.DecodeFromBytes(value); err != nil {
		return ingest.Errorf("truncated", "MRT header: %v", err)
	}
	body := value[mrt.MRT_COMMON_HEADER_LEN:]
	if uint64(len(body)) < uint64(h.Len) {
		return ingest.Errorf("truncated", "MRT record says %d bytes, has %d", h.Len, len(body))
	}
	body = body[:h.Len]
	at, _ := MRTTime(value)
	switch h.Type {
	case mrt.BGP4MP_ET:
		if len(body) < 4 {
			return ingest.Errorf("truncated", "BGP4MP_ET without microseconds")
		}
		return d.bgp4mp(h.SubType, body[4:], at, sink)
	case mrt.BGP4MP:
		return d.bgp4mp(h.SubType, body, at, sink)
	case mrt.TABLE_DUMPv2:
		return d.tableDump(&h, body, at, sink)
	default:
		return ingest.Errorf("unsupported", "MRT type %d subtype %d", h.Type, h.SubType)
	}
}

// bgp4mpHeader is decoded here rather than by gobgp's BGP4MPMessage, which
// throws away a parsed UPDATE when gobgp flags a recoverable attribute
// error; bgpdump, the reference tool, still prints those prefixes.
func (d *MRT) bgp4mpHeader(as4 bool, b []byte) (peer rib.PeerID, rest []byte, err error) {
	asLen := 2
	if as4 {
		asLen = 4
	}
	if len(b) < 2*asLen+4 {
		return 0, nil, ingest.Errorf("truncated", "BGP4MP header")
	}
	var peerAS uint32
	if as4 {
		peerAS = binary.BigEndian.Uint32(b)
	} else {
		peerAS = uint32(binary.BigEndian.Uint16(b))
	}
	b = b[2*asLen:]
	afi := binary.BigEndian.Uint16(b[2:])
	b = b[4:]
	var alen int
	switch afi {
	case gobgp.AFI_IP:
		alen = 4
	case gobgp.AFI_IP6:
		alen = 16
	default:
		return 0, nil, ingest.Errorf("unsupported", "BGP4MP address family %d", afi)
	}
	if len(b) < 2*alen {
		return 0, nil, ingest.Errorf("truncated", "BGP4MP addresses")
	}
	addr, _ := netip.AddrFromSlice(b[:alen])
	peer = d.Table.Peer(rib.PeerKey{Collector: d.Collector, Addr: addr.Unmap(), AS: peerAS})
	return peer, b[2*alen:], nil
}

func (d *MRT) bgp4mp(subtype uint16, b []byte, at int64, sink obs.Sink) error {
	st := mrt.MRTSubTypeBGP4MP(subtype)
	as4, local, addPath := false, false, false
	switch st {
	case mrt.STATE_CHANGE, mrt.STATE_CHANGE_AS4:
		peer, rest, err := d.bgp4mpHeader(st == mrt.STATE_CHANGE_AS4, b)
		if err != nil {
			return err
		}
		if len(rest) < 4 {
			return ingest.Errorf("truncated", "BGP4MP state change")
		}
		from, to := mrt.BGPState(binary.BigEndian.Uint16(rest)), mrt.BGPState(binary.BigEndian.Uint16(rest[2:]))
		if to == mrt.ESTABLISHED {
			d.Table.PeerUp(peer, at)
		} else {
			if from == mrt.ESTABLISHED {
				// The record says the session was up, even if this stream
				// never showed it: count the reset.
				d.Table.PeerUp(peer, at)
			}
			// Leaving Established loses every route of the session; a
			// session still coming up has none to lose.
			d.Table.PeerDown(peer, at)
		}
		return nil
	case mrt.MESSAGE:
	case mrt.MESSAGE_AS4:
		as4 = true
	case mrt.MESSAGE_LOCAL:
		local = true
	case mrt.MESSAGE_AS4_LOCAL:
		as4, local = true, true
	case mrt.MESSAGE_ADDPATH:
		addPath = true
	case mrt.MESSAGE_AS4_ADDPATH:
		as4, addPath = true, true
	case mrt.MESSAGE_LOCAL_ADDPATH:
		local, addPath = true, true
	case mrt.MESSAGE_AS4_LOCAL_ADDPATH:
		as4, local, addPath = true, true, true
	default:
		return ingest.Errorf("unsupported", "BGP4MP subtype %d", subtype)
	}
	peer, rest, err := d.bgp4mpHeader(as4, b)
	if err != nil {
		return err
	}
	var opts []*gobgp.MarshallingOption
	if addPath {
		opts = d.addPath
	}
	msg, perr := gobgp.ParseBGPMessage(rest, opts...)
	if msg == nil {
		return ingest.Errorf("bgp_message", "BGP4MP message: %v", perr)
	}
	if local {
		// What the collector itself sent says nothing about the peer's routes.
		d.Table.Touch(peer, at)
		return nil
	}
	switch body := msg.Body.(type) {
	case *gobgp.BGPUpdate:
		var me *gobgp.MessageError
		if perr != nil && (!errors.As(perr, &me) || me.ErrorHandling >= gobgp.ERROR_HANDLING_AFISAFI_DISABLE) {
			return ingest.Errorf("bgp_update", "BGP4MP update: %v", perr)
		}
		u := d.conv.update(body, peer, at)
		if d.Trace != nil {
			d.Trace(d.Table.PeerKey(peer), u)
		}
		d.Table.Apply(u, sink)
	case *gobgp.BGPNotification:
		d.Table.PeerDown(peer, at)
	default:
		if perr != nil {
			return ingest.Errorf("bgp_message", "BGP4MP message: %v", perr)
		}
		d.Table.Touch(peer, at)
	}
	return nil
}

func (d *MRT) tableDump(h *mrt.MRTHeader, body []byte, at int64, sink obs.Sink) error {
	msg, err := mrt.ParseMRTBody(h, body)
	if err != nil {
		return ingest.Errorf("table_dump", "TABLE_DUMP_V2 subtype %d: %v", h.SubType, err)
	}
	switch b := msg.Body.(type) {
	case *mrt.PeerIndexTable:
		d.peerIndex = d.peerIndex[:0]
		for _, p := range b.Peers {
			a, err := peerAddr(p.IpAddress)
			if err != nil {
				return ingest.Errorf("table_dump", "peer index table: %v", err)
			}
			id := d.Table.Peer(rib.PeerKey{Collector: d.Collector, Addr: a, AS: p.AS})
			d.Table.PeerUp(id, at)
			d.peerIndex = append(d.peerIndex, id)
		}
		return nil
	case *mrt.Rib:
		var pfx netip.Prefix
		var ok bool
		switch x := b.Prefix.(type) {
		case *gobgp.IPAddrPrefix:
			pfx, ok = addrPrefix(x.Prefix, x.Length)
		case *gobgp.IPv6AddrPrefix:
			pfx, ok = addrPrefix(x.Prefix, x.Length)
		default:
			return ingest.Errorf("unsupported", "RIB entry of family %T", b.Prefix)
		}
		if !ok {
			return ingest.Errorf("table_dump", "RIB prefix %v", b.Prefix)
		}
		for _, e := range b.Entries {
			if int(e.PeerIndex) >= len(d.peerIndex) {
				return ingest.Errorf("no_peer_index", "RIB entry for peer %d, index table has %d", e.PeerIndex, len(d.peerIndex))
			}
			u := d.conv.update(&gobgp.BGPUpdate{PathAttributes: e.PathAttributes}, d.peerIndex[e.PeerIndex], at)
			// The prefix is the record's, whatever the entry's MP_REACH says.
			d.one[0] = pfx
			u.Announced = d.one[:]
			if d.Trace != nil {
				d.Trace(d.Table.PeerKey(u.Peer), u)
			}
			d.Table.Apply(u, sink)
		}
		return nil
	default:
		return ingest.Errorf("unsupported", "TABLE_DUMP_V2 subtype %d", h.SubType)
	}
}

// openMaybeCompressed opens path, unwrapping gzip or bzip2 by their magic
// bytes rather than by the file's name. What it reads is buffered, so
// that a reader may peek at what the file holds.
func openMaybeCompressed(path string) (*bufio.Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(3)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return bufio.NewReaderSize(zr, 1<<16), f, nil
	case len(magic) == 3 && string(magic) == "BZh":
		return bufio.NewReaderSize(bzip2.NewReader(br), 1<<16), f, nil
	}
	return br, f, nil
}

// ReadMRTFile splits an MRT file (plain, gzip or bzip2) into records, one
// per MRT record, with Time from the record's header, and calls fn for each
// in file order; fn may keep the record. It stops at fn's first error. A
// file that ends inside a record (an update file still being written or
// fetched) returns an *ingest.TornError after the records before it.
func ReadMRTFile(path string, fn func(ingest.Record) error) error {
	r, c, err := openMaybeCompressed(path)
	if err != nil {
		return err
	}
	defer c.Close()
	return readMRT(path, r, fn)
}

// readMRT is ReadMRTFile of the file at path, opened as r.
func readMRT(path string, r io.Reader, fn func(ingest.Record) error) error {
	var hdr [mrt.MRT_COMMON_HEADER_LEN]byte
	for n := int64(0); ; n++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("%s: %w", path, torn(n, "header", err))
		}
		if t := binary.BigEndian.Uint16(hdr[4:]); n == 0 && !mrtType(t) {
			return fmt.Errorf("%s: record 0: type %d is no MRT type (RFC 6396): not an MRT file (it begins %q)", path, t, hdr[:])
		}
		l := binary.BigEndian.Uint32(hdr[8:])
		if l > maxMRTRecord {
			return fmt.Errorf("%s: record %d: length %d exceeds %d", path, n, l, maxMRTRecord)
		}
		rec := make([]byte, mrt.MRT_COMMON_HEADER_LEN+int(l))
		copy(rec, hdr[:])
		if _, err := io.ReadFull(r, rec[mrt.MRT_COMMON_HEADER_LEN:]); err != nil {
			return fmt.Errorf("%s: %w", path, torn(n, "body", err))
		}
		ts, _ := MRTTime(rec)
		if err := fn(ingest.Record{Stream: Stream, Format: FormatMRT, Offset: n, Time: ts, Value: rec}); err != nil {
			return err
		}
	}
}

// mrtType reports whether t is a type of MRT record (RFC 6396: the
// deprecated 0 to 10, OSPFv2, TABLE_DUMP, TABLE_DUMP_V2, BGP4MP and their
// extended-time, IS-IS and OSPFv3 forms). A file whose first record has
// another is no MRT file: a text dump (bgpdump's output) or a download
// that is a web page.
func mrtType(t uint16) bool { return t <= 17 || t == 32 || t == 33 || t == 48 || t == 49 }

// torn is the error of reading part (a header or a body) of record n:
// an *ingest.TornError where the file ends there, err itself otherwise.
func torn(n int64, part string, err error) error {
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return &ingest.TornError{Record: n, Err: fmt.Errorf("the file ends inside the %s of record %d: %w", part, n+1, io.ErrUnexpectedEOF)}
	}
	return fmt.Errorf("record %d %s: %w", n, part, err)
}
