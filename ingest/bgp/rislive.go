package bgp

import (
	"bytes"
	"math"
	"net/netip"
	"strconv"

	// Four times encoding/json's speed on RIS Live's messages, reading
	// them the same way (FuzzRISLiveParse); RIS Live's full feed is the
	// busiest input a deployment may take.
	"github.com/segmentio/encoding/json"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// RISLive decodes RIPE RIS Live messages: the websocket envelope
// {"type":"ris_message","data":{...}} or the bare data object, as a Kafka
// bridge may store either. UPDATE messages are applied from their decoded
// JSON fields (path, announcements, withdrawals); RIS_PEER_STATE brings a
// peer up or down; OPEN, KEEPALIVE and NOTIFICATION only mark the peer alive.
type RISLive struct {
	Table *rib.Table
	// Trace, when set, sees every update before it is applied.
	Trace Trace

	u        rib.Update
	announce []netip.Prefix
	withdraw []netip.Prefix
}

// NewRISLive returns a RIS Live decoder feeding t.
func NewRISLive(t *rib.Table) *RISLive { return &RISLive{Table: t} }

type risEnvelope struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

type risAnnouncement struct {
	NextHop  string   `json:"next_hop"`
	Prefixes []string `json:"prefixes"`
}

type risMessage struct {
	Timestamp     float64           `json:"timestamp"`
	Peer          string            `json:"peer"`
	PeerASN       json.RawMessage   `json:"peer_asn"` // a string in RIS Live, a number elsewhere
	Host          string            `json:"host"`
	Type          string            `json:"type"`
	Path          []json.RawMessage `json:"path"` // ASNs, with AS_SETs as arrays
	Announcements []risAnnouncement `json:"announcements"`
	Withdrawals   []string          `json:"withdrawals"`
	State         string            `json:"state"`
}

func parseASN(raw json.RawMessage) (uint32, bool) {
	s := string(bytes.Trim(bytes.TrimSpace(raw), `"`))
	v, err := strconv.ParseUint(s, 10, 32)
	return uint32(v), err == nil
}

// Decode applies one RIS Live message.
func (d *RISLive) Decode(value []byte, sink obs.Sink) error {
	var env risEnvelope
	if err := json.Unmarshal(value, &env); err != nil {
		return ingest.Errorf("json", "RIS Live message: %v", err)
	}
	data := value
	switch env.Type {
	case "ris_message":
		if len(env.Data) == 0 {
			return ingest.Errorf("missing_field", "ris_message without data")
		}
		data = env.Data
	case "ris_error":
		return ingest.Errorf("ris_error", "RIS Live error: %s", bytes.TrimSpace(env.Data))
	case "ris_subscribe_ok", "pong", "ris_rrc_list":
		return nil // control messages of the websocket session
	}
	var m risMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return ingest.Errorf("json", "RIS Live data: %v", err)
	}
	addr, err := netip.ParseAddr(m.Peer)
	if err != nil {
		return ingest.Errorf("peer", "RIS Live peer %q: %v", m.Peer, err)
	}
	asn, ok := parseASN(m.PeerASN)
	if !ok {
		return ingest.Errorf("peer_asn", "RIS Live peer_asn %s", m.PeerASN)
	}
	if math.IsNaN(m.Timestamp) || m.Timestamp <= 0 || m.Timestamp > 1e11 {
		return ingest.Errorf("timestamp", "RIS Live timestamp %v", m.Timestamp)
	}
	at := int64(math.Round(m.Timestamp*1e6)) * 1e3
	peer := d.Table.Peer(rib.PeerKey{Collector: m.Host, Addr: addr.Unmap(), AS: asn})
	switch m.Type {
	case "UPDATE":
		u, err := d.update(&m, peer, at)
		if err != nil {
			return err
		}
		if d.Trace != nil {
			d.Trace(d.Table.PeerKey(peer), u)
		}
		d.Table.Apply(u, sink)
	case "RIS_PEER_STATE":
		switch m.State {
		case "connected", "up":
			d.Table.PeerUp(peer, at)
		case "down":
			d.Table.PeerDown(peer, at)
		default:
			return ingest.Errorf("peer_state", "RIS_PEER_STATE %q", m.State)
		}
	case "OPEN", "KEEPALIVE", "NOTIFICATION":
		d.Table.Touch(peer, at)
	default:
		return ingest.Errorf("unknown_type", "RIS Live message type %q", m.Type)
	}
	return nil
}

// update validates everything before the table is touched, so a message
// with one bad prefix is rejected whole rather than half applied.
func (d *RISLive) update(m *risMessage, peer rib.PeerID, at int64) (*rib.Update, error) {
	u := &d.u
	*u = rib.Update{Peer: peer, Time: at, Path: u.Path[:0]}
	lastSet := 0
	for _, el := range m.Path {
		el = bytes.TrimSpace(el)
		if len(el) > 0 && el[0] == '[' {
			var set []uint32
			if err := json.Unmarshal(el, &set); err != nil {
				return nil, ingest.Errorf("path", "RIS Live AS_SET %s: %v", el, err)
			}
			u.Path = append(u.Path, set...)
			lastSet = len(set)
			continue
		}
		a, ok := parseASN(el)
		if !ok {
			return nil, ingest.Errorf("path", "RIS Live path element %s", el)
		}
		u.Path = append(u.Path, a)
		lastSet = 0
	}
	if len(u.Path) > 0 && lastSet <= 1 {
		u.Origin = u.Path[len(u.Path)-1]
	}
	d.announce, d.withdraw = d.announce[:0], d.withdraw[:0]
	for _, a := range m.Announcements {
		for _, s := range a.Prefixes {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, ingest.Errorf("prefix", "RIS Live announced prefix: %v", err)
			}
			d.announce = append(d.announce, p.Masked())
		}
	}
	for _, s := range m.Withdrawals {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, ingest.Errorf("prefix", "RIS Live withdrawn prefix: %v", err)
		}
		d.withdraw = append(d.withdraw, p.Masked())
	}
	u.Announced, u.Withdrawn = d.announce, d.withdraw
	return u, nil
}
