package quality

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
	qm "github.com/outagewatch/outagewatch/obs/quality"
)

// Formats of the quality stream, as ingest.Record.Format names them.
const (
	FormatJSON  = "quality-json"
	FormatAtlas = "atlas-ping"
)

// Measurement is one outagewatch quality measurement: what one probe
// measured towards one destination at one time. Its JSON form, one object
// per record:
//
//	{"time": "2025-04-28T10:35:00Z",  // required: RFC 3339, or Unix seconds (fractions allowed)
//	 "probe": "lis01-p3",             // probe name; with dst and no transit_asn, names a probe entity
//	 "site": "lis01",                 // site the probe runs at; names the transit entity
//	 "src": "203.0.113.9",            // the probe's public address, for netmap lookups
//	 "src_asn": 3243,                 // the probe's network; else netmap's origin AS of src
//	 "country": "PT",                 // the probe's country; else netmap's country of the AS
//	 "dst": "198.51.100.7",           // destination address, aggregated to /24 or /48 in path and probe entities
//	 "dst_asn": 15169,                // destination network; names the path when dst is absent
//	 "transit_asn": 1299,             // transit the probe's traffic leaves the site through
//	 "rtt_ms": [21.9, 22.4],          // round-trip times of answered packets, ms (or one number)
//	 "sent": 10, "rcvd": 9,           // packets sent and answered; come together, rcvd <= sent
//	 "bandwidth_mbps": 83.2}          // measured throughput, Mbit/s
//
// Every field but time is optional, but a measurement must carry at least
// one of rtt_ms (non-empty), sent/rcvd, bandwidth_mbps. null is the same as
// absent; unknown fields are ignored so that probes can add fields before
// the decoder knows them. Site names are letters, digits, '-', '_' and '.'
// (at most 64), as they appear inside entity names.
type Measurement struct {
	Time       int64 // Unix nanoseconds
	Probe      string
	Site       string
	Src        netip.Addr // invalid when absent
	SrcASN     uint32     // 0 when absent
	Country    string     // ISO 3166-1 alpha-2, as received
	Dst        netip.Addr // invalid when absent
	DstASN     uint32
	TransitASN uint32
	RTTms      []float64
	// Sent and Rcvd are packet counts; Sent == 0 means loss was not measured.
	Sent, Rcvd uint32
	// Bandwidth is only meaningful with HasBandwidth: 0 Mbit/s is a
	// measurement (a link that moves nothing), not an absence.
	BandwidthMbps float64
	HasBandwidth  bool
}

// Validate checks what the decoder checks after parsing, so that producers
// (the fixture renderer) can refuse to write what outagewatch would refuse
// to read.
func (m *Measurement) Validate() error {
	if m.Time <= 0 || m.Time >= maxUnixSeconds*1e9 {
		return ingest.Errorf("time", "time %d out of range", m.Time)
	}
	if !utf8.ValidString(m.Probe) {
		return ingest.Errorf("utf8", "probe is not UTF-8")
	}
	if !qm.ValidName(m.Site) {
		return ingest.Errorf("site", "site %.70q: want letters, digits, '-', '_', '.'", m.Site)
	}
	if m.Country != "" && !validCountry(m.Country) {
		return ingest.Errorf("country", "country %.10q: want two letters", m.Country)
	}
	for _, r := range m.RTTms {
		if !(r >= 0) || math.IsInf(r, 0) {
			return ingest.Errorf("value_range", "rtt_ms %v: want a finite non-negative number", r)
		}
	}
	if m.Rcvd > m.Sent {
		return ingest.Errorf("value_range", "rcvd %d > sent %d", m.Rcvd, m.Sent)
	}
	if m.HasBandwidth && (!(m.BandwidthMbps >= 0) || math.IsInf(m.BandwidthMbps, 0)) {
		return ingest.Errorf("value_range", "bandwidth_mbps %v: want a finite non-negative number", m.BandwidthMbps)
	}
	if len(m.RTTms) == 0 && m.Sent == 0 && !m.HasBandwidth {
		return ingest.Errorf("no_measurement", "no rtt_ms, sent/rcvd or bandwidth_mbps")
	}
	return nil
}

func validCountry(s string) bool {
	return len(s) == 2 && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// Stats counts what a decoder did, for metrics.
type Stats struct {
	Measurements uint64 // decoded without error
	Observations uint64 // emitted
	// Unattributed counts measurements that named no entity at all (no
	// source network, country or transit, and nothing netmap could find):
	// valid, but nothing to bucket them under.
	Unattributed uint64
	// Empty counts Atlas results without a single packet sent (the probe
	// could not resolve or reach its target at all).
	Empty uint64
}

// Decoder decodes outagewatch JSON measurements. It keeps scratch state and
// entity caches between calls; it is used by one goroutine at a time.
type Decoder struct {
	emitter
	sc scanner
	m  Measurement
}

// NewDecoder returns a decoder that attributes probes through nm (which may
// be nil when every measurement names its source network and country).
func NewDecoder(nm *netmap.Map) *Decoder {
	return &Decoder{emitter: newEmitter(nm)}
}

var _ ingest.Decoder = (*Decoder)(nil)

// Decode turns one measurement into observations.
func (d *Decoder) Decode(value []byte, sink obs.Sink) error {
	if err := d.parse(value, &d.m, true); err != nil {
		return err
	}
	d.emit(&d.m, sink)
	return nil
}

// Parse decodes and validates one measurement into m, reusing m.RTTms.
// Strings in m are interned by the decoder and stay valid.
func (d *Decoder) Parse(value []byte, m *Measurement) error {
	return d.parse(value, m, true)
}

// parse is Parse; keepProbe false skips interning the probe name (the
// file reader only wants the time).
func (d *Decoder) parse(value []byte, m *Measurement, keepProbe bool) error {
	rtts := m.RTTms[:0]
	*m = Measurement{RTTms: rtts}
	var haveSent, haveRcvd bool
	s := &d.sc
	s.reset(value)
	if s.peek() != '{' {
		return s.syntax("'{'")
	}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if isNull, err := s.null(); err != nil || isNull {
			if err != nil {
				return err
			}
			if string(key) == "time" {
				return ingest.Errorf("missing_field", "time is null")
			}
			continue
		}
		switch string(key) {
		case "time":
			m.Time, err = s.timestamp()
		case "probe":
			var b []byte
			if b, err = s.str(); err == nil {
				if !utf8.Valid(b) {
					return ingest.Errorf("utf8", "probe is not UTF-8")
				}
				if keepProbe {
					m.Probe = d.ent.intern(b)
				}
			}
		case "site":
			var b []byte
			if b, err = s.str(); err == nil {
				if !qm.ValidName(string(b)) {
					return ingest.Errorf("site", "site %.70q: want letters, digits, '-', '_', '.'", b)
				}
				m.Site = d.ent.site(b).name
			}
		case "src":
			m.Src, err = s.addr()
		case "src_asn":
			m.SrcASN, err = s.asn()
		case "country":
			var b []byte
			if b, err = s.str(); err == nil {
				if len(b) != 2 || !isLetter(b[0]) || !isLetter(b[1]) {
					return ingest.Errorf("country", "country %.10q: want two letters", b)
				}
				c := d.ent.country(b)
				m.Country, d.cc = c.code, c
			}
		case "dst":
			m.Dst, err = s.addr()
		case "dst_asn":
			m.DstASN, err = s.asn()
		case "transit_asn":
			m.TransitASN, err = s.asn()
		case "rtt_ms":
			m.RTTms, err = s.rtts(m.RTTms[:0])
		case "sent":
			var v uint64
			v, err = s.uint(math.MaxUint32)
			m.Sent, haveSent = uint32(v), true
		case "rcvd":
			var v uint64
			v, err = s.uint(math.MaxUint32)
			m.Rcvd, haveRcvd = uint32(v), true
		case "bandwidth_mbps":
			m.BandwidthMbps, err = s.float()
			m.HasBandwidth = true
		default:
			err = s.skip(0)
		}
		if err != nil {
			return fieldErr(key, err)
		}
	}
	if err := s.end(); err != nil {
		return err
	}
	if m.Time == 0 {
		return ingest.Errorf("missing_field", "no time")
	}
	if haveSent != haveRcvd {
		return ingest.Errorf("missing_field", "sent and rcvd come together")
	}
	return m.Validate()
}

// asn reads an AS number.
func (s *scanner) asn() (uint32, error) {
	v, err := s.uint(math.MaxUint32)
	return uint32(v), err
}

// rtts reads one RTT or an array of them.
func (s *scanner) rtts(dst []float64) ([]float64, error) {
	if s.peek() != '[' {
		v, err := s.float()
		return append(dst, v), err
	}
	s.i++
	for first := true; ; first = false {
		ok, err := s.elem(first)
		if err != nil || !ok {
			return dst, err
		}
		v, err := s.float()
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
}

// fieldErr names the field a value error came from, keeping its reason.
// Syntax errors carry their offset and need no field.
func fieldErr(key []byte, err error) error {
	var e *ingest.Error
	if !errors.As(err, &e) {
		return &ingest.Error{Reason: "other", Err: fmt.Errorf("%.40s: %w", key, err)}
	}
	if e.Reason == "json" {
		return err
	}
	return &ingest.Error{Reason: e.Reason, Err: fmt.Errorf("%.40s: %w", key, e.Err)}
}

// emitter turns a validated measurement into observations. Both decoders
// share it, so a probe's RTTs mean the same whichever format brought them.
type emitter struct {
	nm    *netmap.Map
	ent   entities
	stats Stats
	obs   obs.Observation
	cc    country // the last country looked up
}

func newEmitter(nm *netmap.Map) emitter {
	return emitter{nm: nm, ent: newEntities()}
}

// Stats returns the counts so far.
func (e *emitter) Stats() Stats { return e.stats }

func (e *emitter) emit(m *Measurement, sink obs.Sink) {
	var ents [4]string // source AS, country, transit or probe
	n := 0
	asn := m.SrcASN
	if asn == 0 && m.Src.IsValid() {
		asn, _ = e.nm.OriginAS(m.Src)
	}
	if asn != 0 {
		ents[n] = e.ent.asn.Entity(asn)
		n++
	}
	cc := m.Country
	if cc == "" && asn != 0 {
		cc = e.nm.Country(asn)
	}
	if cc != "" {
		if e.cc.code != cc { // not the country the parser just looked up
			e.cc = e.ent.country([]byte(cc))
		}
		ents[n] = e.cc.entity
		n++
	}
	var path string
	if m.TransitASN != 0 {
		st := e.ent.siteNamed(m.Site)
		ents[n] = st.transitEntity(m.TransitASN)
		n++
		if m.Sent > 0 {
			path = st.pathEntity(m.TransitASN, m.Dst, m.DstASN)
		}
	}
	// A probe towards a destination, not through a named transit (whose
	// path entity already is that series), is a series of its own.
	probe := ""
	if m.TransitASN == 0 && m.Probe != "" {
		if probe = e.ent.probeEntity(m.Probe, m.Dst, m.DstASN); probe != "" {
			ents[n] = probe
			n++
		}
	}
	e.stats.Measurements++
	if n == 0 {
		e.stats.Unattributed++
		return
	}
	// Fields are set one by one: assigning a whole Observation literal
	// through the pointer copies it via a temporary, which showed in
	// profiles at ten observations a measurement.
	o := &e.obs
	o.Time, o.Hash = m.Time, 0
	// Observations of one series are sent together, so that the
	// aggregator's last-series shortcut finds them without a map lookup.
	if len(m.RTTms) > 0 {
		for _, ent := range ents[:n] {
			o.Entity = ent
			for _, sig := range [2]obs.Signal{qm.LatencyP50, qm.LatencyP95} {
				o.Signal = sig
				for _, r := range m.RTTms {
					o.Value = r
					sink.Observe(o)
				}
			}
		}
		e.stats.Observations += uint64(2 * n * len(m.RTTms))
		// The lowest RTT is one path's base delay: only a probe's own
		// series towards one destination has one (qm.LatencyMin).
		if probe != "" {
			o.Entity, o.Signal = probe, qm.LatencyMin
			for _, r := range m.RTTms {
				o.Value = r
				sink.Observe(o)
			}
			e.stats.Observations += uint64(len(m.RTTms))
		}
	}
	if m.HasBandwidth {
		o.Signal = qm.BandwidthP50
		for _, ent := range ents[:n] {
			o.Entity, o.Value = ent, m.BandwidthMbps
			sink.Observe(o)
		}
		e.stats.Observations += uint64(n)
	}
	if m.Sent > 0 {
		loss := float64(m.Sent-m.Rcvd) / float64(m.Sent)
		o.Signal = qm.PacketLoss
		for _, ent := range ents[:n] {
			o.Entity, o.Value, o.Hash = ent, loss, uint64(m.Sent)
			sink.Observe(o)
		}
		e.stats.Observations += uint64(n)
		if path != "" {
			o.Entity, o.Value, o.Hash = path, loss, uint64(m.Sent)
			sink.Observe(o)
			e.stats.Observations++
		}
	}
}

// AppendJSON appends the JSON form of m to dst, for the fixture renderer and
// tests. Absent fields are left out; non-finite numbers, which JSON cannot
// carry, are left out too (and Validate refuses them). It does not allocate
// beyond growing dst.
func AppendJSON(dst []byte, m *Measurement) []byte {
	dst = append(dst, `{"time":"`...)
	dst = time.Unix(0, m.Time).UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	if m.Probe != "" {
		dst = append(dst, `,"probe":`...)
		dst = appendString(dst, m.Probe)
	}
	if m.Site != "" {
		dst = append(dst, `,"site":`...)
		dst = appendString(dst, m.Site)
	}
	if m.Src.IsValid() {
		dst = append(dst, `,"src":"`...)
		dst = m.Src.AppendTo(dst)
		dst = append(dst, '"')
	}
	dst = appendUint(dst, `,"src_asn":`, m.SrcASN)
	if m.Country != "" {
		dst = append(dst, `,"country":`...)
		dst = appendString(dst, m.Country)
	}
	if m.Dst.IsValid() {
		dst = append(dst, `,"dst":"`...)
		dst = m.Dst.AppendTo(dst)
		dst = append(dst, '"')
	}
	dst = appendUint(dst, `,"dst_asn":`, m.DstASN)
	dst = appendUint(dst, `,"transit_asn":`, m.TransitASN)
	switch n := countFinite(m.RTTms); {
	case n == 1:
		dst = append(dst, `,"rtt_ms":`...)
		for _, r := range m.RTTms {
			if finite(r) {
				dst = strconv.AppendFloat(dst, r, 'g', -1, 64)
			}
		}
	case n > 1:
		dst = append(dst, `,"rtt_ms":[`...)
		sep := false
		for _, r := range m.RTTms {
			if finite(r) {
				if sep {
					dst = append(dst, ',')
				}
				dst = strconv.AppendFloat(dst, r, 'g', -1, 64)
				sep = true
			}
		}
		dst = append(dst, ']')
	}
	if m.Sent > 0 {
		dst = append(dst, `,"sent":`...)
		dst = strconv.AppendUint(dst, uint64(m.Sent), 10)
		dst = append(dst, `,"rcvd":`...)
		dst = strconv.AppendUint(dst, uint64(m.Rcvd), 10)
	}
	if m.HasBandwidth && finite(m.BandwidthMbps) {
		dst = append(dst, `,"bandwidth_mbps":`...)
		dst = strconv.AppendFloat(dst, m.BandwidthMbps, 'g', -1, 64)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string. Validate has made sure it is
// UTF-8; only the quote, the backslash and control characters need escapes.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

func appendUint(dst []byte, key string, v uint32) []byte {
	if v == 0 {
		return dst
	}
	dst = append(dst, key...)
	return strconv.AppendUint(dst, uint64(v), 10)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func countFinite(fs []float64) int {
	n := 0
	for _, f := range fs {
		if finite(f) {
			n++
		}
	}
	return n
}
