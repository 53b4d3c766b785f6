package quality

import (
	"math"
	"net/netip"
	"strconv"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// AtlasDecoder decodes RIPE Atlas ping results, one JSON object per record,
// as the Atlas API and result stream deliver them:
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
}

// NewAtlasDecoder returns a decoder that attributes probes through nm.
func NewAtlasDecoder(nm *netmap.Map) *AtlasDecoder {
	return &AtlasDecoder{emitter: newEmitter(nm)}
}

var _ ingest.Decoder = (*AtlasDecoder)(nil)

// Decode turns one Atlas ping result into observations. A result for which
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
	)
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
			if b, err = s.str(); err == nil && string(b) != "ping" {
				return false, ingest.Errorf("type", "Atlas result of type %.20q, want ping", b)
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
			m.RTTms, counted, answered, err = s.atlasPackets(m.RTTms)
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
	switch {
	case haveSent != haveRcvd:
		return false, ingest.Errorf("missing_field", "sent and rcvd come together")
	case !haveSent:
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

// atlasPackets reads the result array of a ping result: the RTTs of the
// answered, non-duplicate packets, and how many packets were answered or
// timed out (for results without sent/rcvd).
func (s *scanner) atlasPackets(rtts []float64) (_ []float64, counted, answered uint32, err error) {
	if s.peek() != '[' {
		return rtts, 0, 0, s.notA("array")
	}
	s.i++
	for first := true; ; first = false {
		ok, err := s.elem(first)
		if err != nil || !ok {
			return rtts, counted, answered, err
		}
		if s.peek() != '{' {
			return rtts, 0, 0, s.notA("object in result")
		}
		s.i++
		rtt, hasRTT, dup, timeout := 0.0, false, false, false
		for first := true; ; first = false {
			key, ok, err := s.member(first)
			if err != nil {
				return rtts, 0, 0, err
			}
			if !ok {
				break
			}
			switch string(key) {
			case "rtt":
				if rtt, err = s.float(); err == nil {
					hasRTT = true
					if !(rtt >= 0) {
						return rtts, 0, 0, ingest.Errorf("value_range", "rtt %v", rtt)
					}
				}
			case "dup":
				// Atlas writes "dup": 1; accept a boolean too.
				switch s.peek() {
				case 't':
					err, dup = s.literal("true"), true
				case 'f':
					err = s.literal("false")
				default:
					var v float64
					v, err = s.float()
					dup = v != 0
				}
			case "x":
				timeout = true
				err = s.skip(0)
			default:
				err = s.skip(0)
			}
			if err != nil {
				return rtts, 0, 0, err
			}
		}
		switch {
		case dup:
		case hasRTT:
			rtts = append(rtts, rtt)
			counted++
			answered++
		case timeout:
			counted++
		}
	}
}
