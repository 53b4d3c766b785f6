package dnsin

import (
	"bytes"
	"net/netip"
	"strconv"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/jsonstr"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// QueryLogDecoder decodes JSON query logs, one object per query and per
// record, as resolvers and DNS proxies write them:
//
//	{"time":"2025-04-28T10:33:00.25Z","client":"192.0.2.7","qname":"example.pt.",
//	 "qtype":"A","rcode":"SERVFAIL","protocol":"udp"}
//
// time is RFC 3339 or Unix seconds (a number, or a string of one); rcode is
// a name ("NOERROR", "NXDOMAIN", "SERVFAIL", "REFUSED", ...), "TIMEOUT" for
// a query that got no answer, or a number. time and client are required;
// a line without rcode counts as a query but not in the failure ratio.
// Other members are skipped. A hand scanner reads the line in one pass
// without allocating.
//
// The client address is used for attribution and hashed for the
// distinct-client sketch; it is never stored.
type QueryLogDecoder struct {
	attr    attributor
	ev      event
	scratch []byte
	line    logLine
}

// logLine is what decode reads from a line.
type logLine struct {
	Time     int64
	Client   netip.Addr
	QType    uint16
	Rcode    int
	HasRcode bool
	Protocol [8]byte // lower-case, truncated; informational
}

var _ ingest.Decoder = (*QueryLogDecoder)(nil)

// NewQueryLogDecoder returns a decoder attributing clients with m. Only
// cfg.ClientHashSeed applies: every line is a query.
func NewQueryLogDecoder(m *netmap.Map, cfg Config) *QueryLogDecoder {
	return &QueryLogDecoder{
		attr:    newAttributor(m, cfg),
		ev:      event{name: make([]byte, 0, 4*maxNameWire)},
		scratch: make([]byte, 0, 256),
	}
}

// Stats returns the decoder's counters.
func (d *QueryLogDecoder) Stats() Stats { return d.attr.stats }

// Decode decodes one query-log line into observations.
func (d *QueryLogDecoder) Decode(value []byte, sink obs.Sink) error {
	d.attr.stats.Records++
	if err := d.decode(value); err != nil {
		d.attr.stats.Malformed++
		return err
	}
	ev := &d.ev
	ev.time = d.line.Time
	ev.client = d.line.Client
	ev.query = true
	ev.response = d.line.HasRcode
	ev.rcode = d.line.Rcode
	d.attr.observe(ev, sink)
	return nil
}

// Members of a query-log line.
var (
	keyTime     = []byte("time")
	keyClient   = []byte("client")
	keyQName    = []byte("qname")
	keyQType    = []byte("qtype")
	keyRcode    = []byte("rcode")
	keyProtocol = []byte("protocol")
)

func (d *QueryLogDecoder) decode(b []byte) error {
	q := &d.line
	*q = logLine{}
	d.ev.name = d.ev.name[:0]
	hasTime, hasClient := false, false
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ingest.Errorf("json", "query log line is not a JSON object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return ingest.Errorf("json", "expected a member name at offset %d", i)
			}
			ks, ke, kesc, next := scanString(b, i)
			if next < 0 {
				return ingest.Errorf("json", "unterminated member name at offset %d", i)
			}
			key := b[ks:ke]
			if kesc {
				key = nil // escaped names are none of ours
			}
			i = skipSpace(b, next)
			if i >= len(b) || b[i] != ':' {
				return ingest.Errorf("json", "expected ':' at offset %d", i)
			}
			i = skipSpace(b, i+1)
			if i >= len(b) {
				return ingest.Errorf("json", "line ends before a value")
			}
			var err error
			isNull := bytes.HasPrefix(b[i:], []byte("null"))
			switch {
			case isNull:
				i, err = skipValue(b, i)
			case bytes.Equal(key, keyTime):
				i, err = d.parseTime(b, i)
				hasTime = err == nil
			case bytes.Equal(key, keyClient):
				i, err = d.parseClient(b, i)
				hasClient = err == nil
			case bytes.Equal(key, keyQName):
				i, err = d.parseQName(b, i)
			case bytes.Equal(key, keyQType):
				i, err = d.parseQType(b, i)
			case bytes.Equal(key, keyRcode):
				i, err = d.parseRcode(b, i)
			case bytes.Equal(key, keyProtocol):
				var s []byte
				s, i, err = d.stringValue(b, i, "protocol")
				if err == nil {
					copy(q.Protocol[:], s)
				}
			default:
				i, err = skipValue(b, i)
			}
			if err != nil {
				return err
			}
			i = skipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return ingest.Errorf("json", "expected ',' or '}' at offset %d", i)
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return ingest.Errorf("json", "data after the object at offset %d", i)
	}
	if !hasTime {
		return ingest.Errorf("field_missing", "query log line has no time")
	}
	if !hasClient {
		return ingest.Errorf("field_missing", "query log line has no client")
	}
	return nil
}

// stringValue returns the unescaped string at b[i], which must be a JSON
// string; the result is valid until the next call.
func (d *QueryLogDecoder) stringValue(b []byte, i int, field string) ([]byte, int, error) {
	if b[i] != '"' {
		return nil, i, ingest.Errorf("field_type", "%s is not a string", field)
	}
	s, e, esc, next := scanString(b, i)
	if next < 0 {
		return nil, i, ingest.Errorf("json", "unterminated string in %s", field)
	}
	if !esc {
		return b[s:e], next, nil
	}
	var ok bool
	d.scratch, ok = jsonstr.Unescape(d.scratch[:0], b[s:e])
	if !ok {
		return nil, i, ingest.Errorf("json", "bad escape in %s", field)
	}
	return d.scratch, next, nil
}

func (d *QueryLogDecoder) parseTime(b []byte, i int) (int, error) {
	if b[i] == '"' {
		s, next, err := d.stringValue(b, i, "time")
		if err != nil {
			return i, err
		}
		t, ok := parseTimeText(s)
		if !ok {
			return i, ingest.Errorf("time", "time %.40q is neither RFC 3339 nor Unix seconds", s)
		}
		d.line.Time = t
		return next, nil
	}
	e := scanNumber(b, i)
	t, ok := parseUnixSeconds(b[i:e])
	if e == i || !ok {
		return i, ingest.Errorf("time", "time %.40q is not Unix seconds", b[i:e])
	}
	d.line.Time = t
	return e, nil
}

func (d *QueryLogDecoder) parseClient(b []byte, i int) (int, error) {
	s, next, err := d.stringValue(b, i, "client")
	if err != nil {
		return i, err
	}
	if len(s) == 0 {
		return i, ingest.Errorf("address", "empty client address")
	}
	// ParseAddr keeps no reference to its argument except in its error,
	// which is formatted here at once.
	a, err := netip.ParseAddr(unsafe.String(&s[0], len(s)))
	if err != nil {
		return i, ingest.Errorf("address", "client: %s", err.Error())
	}
	d.line.Client = a.Unmap().WithZone("")
	return next, nil
}

func (d *QueryLogDecoder) parseQName(b []byte, i int) (int, error) {
	s, next, err := d.stringValue(b, i, "qname")
	if err != nil {
		return i, err
	}
	if len(s) > 4*maxNameWire {
		return i, ingest.Errorf("dns", "qname of %d bytes", len(s))
	}
	n := d.ev.name[:0]
	for _, c := range s {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		n = append(n, c)
	}
	for len(n) > 0 && n[len(n)-1] == '.' && (len(n) < 2 || n[len(n)-2] != '\\') {
		n = n[:len(n)-1]
	}
	if bytes.Contains(n, []byte("..")) || len(n) > 0 && n[0] == '.' {
		return i, ingest.Errorf("dns", "qname %.40q has an empty label", s)
	}
	d.ev.name = n
	return next, nil
}

func (d *QueryLogDecoder) parseQType(b []byte, i int) (int, error) {
	if b[i] != '"' {
		e := scanNumber(b, i)
		v, err := strconv.ParseUint(unsafeString(b[i:e]), 10, 16)
		if e == i || err != nil {
			return i, ingest.Errorf("field_type", "qtype %.20q is not a type number", b[i:e])
		}
		d.line.QType = uint16(v)
		return e, nil
	}
	s, next, err := d.stringValue(b, i, "qtype")
	if err != nil {
		return i, err
	}
	// Unknown type names are kept as 0: the signals do not depend on them.
	var buf [16]byte
	if len(s) > len(buf) {
		return next, nil
	}
	up := upper(buf[:0], s)
	if t, ok := dns.StringToType[unsafeString(up)]; ok {
		d.line.QType = t
	} else if len(up) > 4 && string(up[:4]) == "TYPE" {
		if v, err := strconv.ParseUint(unsafeString(up[4:]), 10, 16); err == nil {
			d.line.QType = uint16(v)
		}
	}
	return next, nil
}

func (d *QueryLogDecoder) parseRcode(b []byte, i int) (int, error) {
	if b[i] != '"' {
		e := scanNumber(b, i)
		v, err := strconv.ParseUint(unsafeString(b[i:e]), 10, 12)
		if e == i || err != nil {
			return i, ingest.Errorf("rcode", "rcode %.20q is not a response code", b[i:e])
		}
		d.line.Rcode, d.line.HasRcode = int(v), true
		return e, nil
	}
	s, next, err := d.stringValue(b, i, "rcode")
	if err != nil {
		return i, err
	}
	var buf [16]byte
	if len(s) > len(buf) {
		return i, ingest.Errorf("rcode", "unknown rcode %.20q", s)
	}
	up := upper(buf[:0], s)
	if string(up) == "TIMEOUT" {
		d.line.Rcode, d.line.HasRcode = RcodeTimeout, true
		return next, nil
	}
	if v, ok := dns.StringToRcode[unsafeString(up)]; ok {
		d.line.Rcode, d.line.HasRcode = v, true
		return next, nil
	}
	if v, err := strconv.ParseUint(unsafeString(up), 10, 12); err == nil {
		d.line.Rcode, d.line.HasRcode = int(v), true
		return next, nil
	}
	return i, ingest.Errorf("rcode", "unknown rcode %.20q", s)
}

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func upper(dst, s []byte) []byte {
	for _, c := range s {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the JSON string starting at b[i] == '"': the content is
// b[start:end], esc says whether it has escapes, next is the offset after
// the closing quote, or -1 if there is none. Control characters are
// rejected as JSON requires.
func scanString(b []byte, i int) (start, end int, esc bool, next int) {
	start = i + 1
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return start, j, esc, j + 1
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return 0, 0, false, -1
		}
	}
	return 0, 0, false, -1
}

func scanNumber(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue skips the JSON value at b[i] and returns the offset after it.
// Nested objects and arrays are skipped by counting brackets outside
// strings; the members skipped are not validated further.
func skipValue(b []byte, i int) (int, error) {
	switch c := b[i]; {
	case c == '"':
		_, _, _, next := scanString(b, i)
		if next < 0 {
			return i, ingest.Errorf("json", "unterminated string at offset %d", i)
		}
		return next, nil
	case c == '{' || c == '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				_, _, _, next := scanString(b, j)
				if next < 0 {
					return i, ingest.Errorf("json", "unterminated string at offset %d", j)
				}
				j = next - 1
			case '{', '[':
				depth++
				if depth > 64 {
					return i, ingest.Errorf("json", "nesting deeper than 64 at offset %d", j)
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return i, ingest.Errorf("json", "unterminated %c at offset %d", c, i)
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i), nil
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit), nil
		}
	}
	return i, ingest.Errorf("json", "unexpected %q at offset %d", b[i], i)
}
