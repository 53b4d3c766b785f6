package bgp

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/bmp"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// BMP decodes BMP messages (RFC 7854), one per call: route monitoring
// updates, peer up and peer down. Statistics, initiation, termination and
// route mirroring are accepted and ignored. A router that sends both
// pre- and post-policy Adj-RIB-In for a peer feeds both into the same peer
// entry; configure it to send one.
type BMP struct {
	Table *rib.Table
	// Collector names the monitored router or BMP station; it is part of
	// every peer's key.
	Collector string
	// Trace, when set, sees every update before it is applied.
	Trace Trace

	last int64 // latest per-peer header time, for messages without one
	conv converter
}

// NewBMP returns a BMP decoder feeding t.
func NewBMP(t *rib.Table, collector string) *BMP { return &BMP{Table: t, Collector: collector} }

// maxBMPMessage bounds a BMP message: a BGP message is at most 64 KiB even
// with extended messages, plus the BMP headers.
const maxBMPMessage = 1 << 17

// bmpTime converts a per-peer header timestamp; routers that do not fill it
// in send zero, and the decoder then uses the latest time it saw.
func (d *BMP) bmpTime(ts float64) int64 {
	if ts > 0 && ts < 1e11 && !math.IsNaN(ts) {
		at := int64(math.Round(ts*1e6)) * 1e3
		if at > d.last {
			d.last = at
		}
		return at
	}
	return d.last
}

// Decode applies one BMP message.
func (d *BMP) Decode(value []byte, sink obs.Sink) (err error) {
	defer guard(&err)
	if len(value) < bmp.BMP_HEADER_SIZE {
		return ingest.Errorf("truncated", "BMP header of %d bytes", len(value))
	}
	if value[0] != bmp.BMP_VERSION {
		return ingest.Errorf("bmp_version", "BMP version %d", value[0])
	}
	if l := binary.BigEndian.Uint32(value[1:]); l > uint32(len(value)) || l < bmp.BMP_HEADER_SIZE {
		return ingest.Errorf("truncated", "BMP message says %d bytes, has %d", l, len(value))
	}
	msg, perr := bmp.ParseBMPMessage(value)
	if msg == nil {
		return ingest.Errorf("bmp", "BMP message: %v", perr)
	}
	switch body := msg.Body.(type) {
	case *bmp.BMPRouteMonitoring:
		if body.BGPUpdate == nil {
			return ingest.Errorf("bgp_message", "BMP route monitoring: %v", perr)
		}
		upd, ok := body.BGPUpdate.Body.(*gobgp.BGPUpdate)
		if !ok {
			return ingest.Errorf("bgp_message", "BMP route monitoring carries BGP type %d", body.BGPUpdate.Header.Type)
		}
		if perr != nil {
			if e, ok := perr.(*gobgp.MessageError); !ok || e.ErrorHandling >= gobgp.ERROR_HANDLING_AFISAFI_DISABLE {
				return ingest.Errorf("bgp_update", "BMP route monitoring: %v", perr)
			}
		}
		peer, at, err := d.peer(&msg.PeerHeader)
		if err != nil {
			return err
		}
		u := d.conv.update(upd, peer, at)
		if d.Trace != nil {
			d.Trace(d.Table.PeerKey(peer), u)
		}
		d.Table.Apply(u, sink)
	case *bmp.BMPPeerUpNotification:
		peer, at, err := d.peer(&msg.PeerHeader)
		if err != nil {
			return err
		}
		d.Table.PeerUp(peer, at)
	case *bmp.BMPPeerDownNotification:
		peer, at, err := d.peer(&msg.PeerHeader)
		if err != nil {
			return err
		}
		d.Table.PeerDown(peer, at)
	default:
		if perr != nil {
			return ingest.Errorf("bmp", "BMP message type %d: %v", msg.Header.Type, perr)
		}
	}
	return nil
}

func (d *BMP) peer(h *bmp.BMPPeerHeader) (rib.PeerID, int64, error) {
	a, err := peerAddr(h.PeerAddress)
	if err != nil {
		return 0, 0, ingest.Errorf("peer", "BMP peer header: %v", err)
	}
	return d.Table.Peer(rib.PeerKey{Collector: d.Collector, Addr: a, AS: h.PeerAS}), d.bmpTime(h.Timestamp), nil
}

// ReadBMPFile splits a file of concatenated BMP messages (plain, gzip or
// bzip2), as a BMP station records them, into records, with Time from the
// per-peer header where there is one, and calls fn for each in order. A
// file that ends inside a message returns an *ingest.TornError after the
// messages before it.
func ReadBMPFile(path string, fn func(ingest.Record) error) error {
	r, c, err := openMaybeCompressed(path)
	if err != nil {
		return err
	}
	defer c.Close()
	var hdr [bmp.BMP_HEADER_SIZE]byte
	var last int64
	for n := int64(0); ; n++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("%s: %w", path, torn(n, "header", err))
		}
		l := binary.BigEndian.Uint32(hdr[1:])
		if hdr[0] != bmp.BMP_VERSION || l < bmp.BMP_HEADER_SIZE || l > maxBMPMessage {
			return fmt.Errorf("%s: message %d: version %d, length %d: not a BMP stream", path, n, hdr[0], l)
		}
		rec := make([]byte, l)
		copy(rec, hdr[:])
		if _, err := io.ReadFull(r, rec[bmp.BMP_HEADER_SIZE:]); err != nil {
			return fmt.Errorf("%s: %w", path, torn(n, "body", err))
		}
		// Per-peer header: type(1) flags(1) distinguisher(8) address(16)
		// AS(4) BGP ID(4) seconds(4) microseconds(4).
		if t := rec[5]; t != bmp.BMP_MSG_INITIATION && t != bmp.BMP_MSG_TERMINATION && len(rec) >= bmp.BMP_HEADER_SIZE+bmp.BMP_PEER_HEADER_SIZE {
			ph := rec[bmp.BMP_HEADER_SIZE:]
			if s := binary.BigEndian.Uint32(ph[34:]); s != 0 {
				last = int64(s)*1e9 + int64(binary.BigEndian.Uint32(ph[38:]))*1e3
			}
		}
		if err := fn(ingest.Record{Stream: Stream, Format: FormatBMP, Offset: n, Time: last, Value: rec}); err != nil {
			return err
		}
	}
}
