package quality

import (
	"math"
	"net/netip"
	"strconv"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// AtlasDecoder decodes RIPE Atlas ping (and traceroute) results, one JSON
// object per record, as the Atlas API and result stream deliver them:
//
//	{"type": "ping", "af": 4, "prb_id": 202, "msm_id": 1000192,
//	 "timestamp": 1378271710, "from": "80.56.151.3", "src_addr": "192.168.1.229",
//	 "dst_addr": "62.2.16.12", "sent": 3, "rcvd": 1, "avg": 27.301, ...,
//	 "result": [{"x": "*"}, {"rtt": 27.301, "ttl": 54}, {"error": "..."}]}
//
// Latency comes from each answered packet in result, not from avg/min/max,
// so that the bucket's percentiles are percentiles of packets. Duplicate
// replies (entries with "dup") are left out, as RIPE's own sagan library
// leaves them out of its medians: they answer a packet already counted.
// Timeouts ({"x": "*"}) and errors carry no RTT; loss is (sent − rcvd)/sent
// from the result's own counts, or counted from result when both are absent.
//
// Probes are attributed by their public address ("from", else "src_addr";
// Atlas leaves "from" empty where it knows none, and such a result counts
// for the probe's own series alone) through netmap: origin AS, then that
// AS's country. Atlas names no transit,
// so Atlas results give no transit or path entities; each probe and
// destination gets an entity of its own (probe:<prb_id>><destination /24 or
// /48>), so that one probe's RTT series is judged on its own, as a RIPE
// Atlas user watches it, beside the series of its network and country.
type AtlasDecoder struct {
	emitter
	sc scanner
	m  Measurement
	// hop is a traceroute result's last hop read so far (scratch).
	hop []hopReply
}

// hopReply is one packet of a traceroute hop: who answered (invalid for
// a timeout or an error) and in how many milliseconds.
type hopReply struct {
	from netip.Addr
	rtt  float64
}

// NewAtlasDecoder returns a decoder that attributes probes through nm.
func NewAtlasDecoder(nm *netmap.Map) *AtlasDecoder {
	return &AtlasDecoder{emitter: newEmitter(nm)}
}

var _ ingest.Decoder = (*AtlasDecoder)(nil)

// A traceroute result (type "traceroute") is read for the same series as
// a ping towards its destination: the packets of its last hop, those the
// destination answered with their RTT and the rest as lost. That is the
// end-to-end RTT the RTT-change literature reads from Atlas's built-in
// traceroutes; a last hop that is not the destination (it was not
// reached) is all loss.

// Decode turns one Atlas ping or traceroute result into observations. A result for which
// no packet was sent (the probe failed before pinging) is counted in
// Stats().Empty and yields nothing.
func (d *AtlasDecoder) Decode(value []byte, sink obs.Sink) error {
	m := &d.m
	empty, err := d.Parse(value, m)
	if err != nil {
		return err
	}
	if empty {
		d.stats.Empty++
		return nil
	}
	d.emit(m, sink)
	return nil
}

// Parse decodes one Atlas ping result into m (reusing m.RTTms). empty says
// the result holds no measurement at all.
func (d *AtlasDecoder) Parse(value []byte, m *Measurement) (empty bool, err error) {
	*m = Measurement{RTTms: m.RTTms[:0]}
	s := &d.sc
	s.reset(value)
	if s.peek() != '{' {
		return false, s.syntax("'{'")
	}
	s.i++
	var (
		haveSent, haveRcvd bool
		counted            uint32 // packets answered or timed out, from result
		answered           uint32
		from, srcAddr      netip.Addr
		traceroute         bool // a result made of hops
	)
	d.hop = d.hop[:0]
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
		if isNull, err := s.null(); err != nil || isNull {
			if err != nil {
				return false, err
			}
			continue
		}
		switch string(key) {
		case "type":
			var b []byte
			if b, err = s.str(); err == nil && string(b) != "ping" && string(b) != "traceroute" {
				return false, ingest.Errorf("type", "Atlas result of type %.20q, want ping or traceroute", b)
			}
		case "af":
			var v uint64
			if v, err = s.uint(255); err == nil && v != 4 && v != 6 {
				return false, ingest.Errorf("value_range", "af %d, want 4 or 6", v)
			}
		case "timestamp":
			m.Time, err = s.timestamp()
		case "prb_id":
			var v uint64
			if v, err = s.uint(math.MaxUint32); err == nil {
				m.Probe = d.probeName(v)
			}
		case "msm_id":
			_, err = s.uint(math.MaxUint32)
		case "from":
			from, err = s.optAddr()
		case "src_addr":
			srcAddr, err = s.optAddr()
		case "dst_addr":
			m.Dst, err = s.optAddr()
		case "sent":
			var v uint64
			v, err = s.uint(math.MaxUint32)
			m.Sent, haveSent = uint32(v), true
		case "rcvd":
			var v uint64
			v, err = s.uint(math.MaxUint32)
			m.Rcvd, haveRcvd = uint32(v), true
		case "result":
			m.RTTms, d.hop, counted, answered, traceroute, err = s.atlasResult(m.RTTms, d.hop)
		default:
			err = s.skip(0)
		}
		if err != nil {
			return false, fieldErr(key, err)
		}
	}
	if err := s.end(); err != nil {
		return false, err
	}
	if m.Time == 0 {
		return false, ingest.Errorf("missing_field", "no timestamp")
	}
	if traceroute {
		// Only now is dst_addr known, wherever it stood in the object.
		counted, answered = uint32(len(d.hop)), 0
		for _, r := range d.hop {
			if r.from.IsValid() && r.from == m.Dst {
				m.RTTms = append(m.RTTms, r.rtt)
				answered++
			}
		}
	}
	switch {
	case haveSent != haveRcvd:
		return false, ingest.Errorf("missing_field", "sent and rcvd come together")
	case !haveSent || traceroute:
		m.Sent, m.Rcvd = counted, answered
	}
	m.Src = from
	if !m.Src.IsValid() {
		m.Src = srcAddr
	}
	if len(m.RTTms) == 0 && m.Sent == 0 {
		return true, nil
	}
	return false, m.Validate()
}

// probeName returns the decimal name of an Atlas probe id, interned.
func (d *AtlasDecoder) probeName(id uint64) string {
	var buf [20]byte
	return d.ent.intern(strconv.AppendUint(buf[:0], id, 10))
}

// atlasResult reads the result array of a ping result (packets) or of a
// traceroute result (hops, each with packets of its own: an element with
// a "result" of its own is a hop). For a ping: the RTTs of the answered,
// non-duplicate packets, and how many packets were answered or timed out
// (for results without sent/rcvd). For a traceroute: the packets of its
// last hop that has any, in hop, to be matched with the destination once
// the whole object is read.
func (s *scanner) atlasResult(rtts []float64, hop []hopReply) (_ []float64, _ []hopReply, counted, answered uint32, traceroute bool, err error) {
	if s.peek() != '[' {
		return rtts, hop, 0, 0, false, s.notA("array")
	}
	s.i++
	var last []hopReply // the hop being read: packets appended after hop's
	for first := true; ; first = false {
		ok, err := s.elem(first)
		if err != nil || !ok {
			return rtts, hop, counted, answered, traceroute, err
		}
		if s.peek() != '{' {
			return rtts, hop, 0, 0, false, s.notA("object in result")
		}
		s.i++
		var p packet
		isHop := false
		for first := true; ; first = false {
			key, ok, err := s.member(first)
			if err != nil {
				return rtts, hop, 0, 0, false, err
			}
			if !ok {
				break
			}
			if string(key) == "result" {
				isHop = true
				last, err = s.hopPackets(hop[len(hop):])
			} else {
				err = s.packetField(key, &p)
			}
			if err != nil {
				return rtts, hop, 0, 0, false, err
			}
		}
		switch {
		case isHop:
			traceroute = true
			if len(last) > 0 {
				// A later hop with packets replaces the one before.
				hop = append(hop[:0], last...)
			}
		case p.dup:
		case p.hasRTT:
			rtts = append(rtts, p.rtt)
			counted++
			answered++
		case p.timeout:
			counted++
		}
	}
}

// packet is what one element of a ping result, or of a traceroute hop,
// says.
type packet struct {
	from                 netip.Addr
	rtt                  float64
	hasRTT, dup, timeout bool
}

// packetField reads the member key of a packet into p.
func (s *scanner) packetField(key []byte, p *packet) (err error) {
	switch string(key) {
	case "rtt":
		if p.rtt, err = s.float(); err == nil {
			p.hasRTT = true
			if !(p.rtt >= 0) {
				return ingest.Errorf("value_range", "rtt %v", p.rtt)
			}
		}
	case "dup":
		// Atlas writes "dup": 1; accept a boolean too.
		switch s.peek() {
		case 't':
			err, p.dup = s.literal("true"), true
		case 'f':
			err = s.literal("false")
		default:
			var v float64
			v, err = s.float()
			p.dup = v != 0
		}
	case "x":
		p.timeout = true
		err = s.skip(0)
	case "from":
		if isNull, nerr := s.null(); nerr != nil || isNull {
			return nerr
		}
		p.from, err = s.optAddr()
	default:
		err = s.skip(0)
	}
	return err
}

// hopPackets reads a traceroute hop's packets into buf: who answered
// each and its RTT. Duplicates are left out; a timeout or an error is a
// packet that nobody answered. Late replies ("late") and ICMP errors
// from the destination still answer.
func (s *scanner) hopPackets(buf []hopReply) ([]hopReply, error) {
	if s.peek() != '[' {
		return buf, s.notA("array")
	}
	s.i++
	for first := true; ; first = false {
		ok, err := s.elem(first)
		if err != nil || !ok {
			return buf, err
		}
		if s.peek() != '{' {
			return buf, s.notA("object in a hop's result")
		}
		s.i++
		var p packet
		for first := true; ; first = false {
			key, ok, err := s.member(first)
			if err != nil {
				return buf, err
			}
			if !ok {
				break
			}
			if err := s.packetField(key, &p); err != nil {
				return buf, err
			}
		}
		switch {
		case p.dup:
		case p.hasRTT:
			buf = append(buf, hopReply{from: p.from, rtt: p.rtt})
		default:
			buf = append(buf, hopReply{})
		}
	}
}
