// Package obsfile reads observations that were measured elsewhere, so that a
// series exported from an Internet observatory (a Radar or IODA export), a
// Prometheus query or another outagewatch can be replayed through the same
// aggregation, detectors and rules as live data.
//
// Two line formats carry the same four fields:
//
//	{"time": "2025-04-28T10:35:00Z", "entity": "country:PT", "signal": "traffic_bytes", "value": 123.4}
//	2025-04-28T10:35:00Z,country:PT,traffic_bytes,123.4
//
// time is RFC 3339 or Unix seconds (a number, fractions allowed); entity is
// "kind:id"; signal is a registered signal name; value is a finite number (in
// JSON also a numeric string, as Prometheus writes sample values). CSV files
// may start with the header row "time,entity,signal,value"; fields may be
// quoted as RFC 4180 allows. JSON objects may carry other keys, which are
// ignored.
//
// Entities are brought to the spelling the live decoders use, so that a
// replayed series and a live one meet in the same bucket: country and region
// codes in upper case, zones in lower case without the final dot, and
// "asn:AS5089" as "asn:5089".
package obsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// Stream and format names of the observations input.
const (
	Stream     = "observations"
	FormatJSON = "obs-json"
	FormatCSV  = "obs-csv"
)

func init() {
	ingest.RegisterFormat(Stream, FormatJSON, func(*ingest.Env) (ingest.Decoder, error) { return NewJSONDecoder(), nil })
	ingest.RegisterFormat(Stream, FormatCSV, func(*ingest.Env) (ingest.Decoder, error) { return NewCSVDecoder(), nil })
}

func normalizeEntity(raw string) (string, error) {
	kind, id, err := obs.SplitEntity(strings.TrimSpace(raw))
	if err != nil {
		return "", ingest.Errorf("entity", "%v", err)
	}
	switch kind {
	case obs.KindASN:
		digits := id
		if len(digits) > 2 && strings.EqualFold(digits[:2], "as") {
			digits = digits[2:]
		}
		n, err := strconv.ParseUint(digits, 10, 32)
		if err != nil {
			return "", ingest.Errorf("entity", "entity %q: AS number is not a 32-bit number", raw)
		}
		return obs.ASN(uint32(n)), nil
	case obs.KindCountry:
		return obs.Country(id), nil
	case obs.KindRegion:
		return obs.Region(id), nil
	case obs.KindZone:
		return obs.Zone(id), nil
	}
	return kind + ":" + id, nil
}

func lookupSignal(name string) (obs.Signal, error) {
	s, ok := obs.Lookup(strings.TrimSpace(name))
	if !ok {
		return 0, ingest.Errorf("signal", "unknown signal %q", name)
	}
	return s, nil
}

// ParseTime reads an event time, RFC 3339 or Unix seconds, into Unix
// nanoseconds. Seconds are read digit by digit rather than through a float,
// so "1745836500.123456789" keeps its nanoseconds.
func ParseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, ingest.Errorf("time", "empty time")
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' {
		if strings.IndexByte(s, '-') <= 0 && strings.IndexByte(s, ':') < 0 {
			return unixSeconds(s)
		}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return fromTime(t, s)
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if _, err := time.Parse(layout, s); err == nil {
			// Read as UTC, a local time would be hours off without a word.
			return 0, ingest.Errorf("time", "time %q has no zone: write UTC as %sZ (or +00:00)", s, s)
		}
	}
	return 0, ingest.Errorf("time", "time %q is neither RFC 3339 nor Unix seconds", s)
}

// Unix nanoseconds fit an int64 from 1677 to 2262; times before 1970 are
// rejected too, as no measurement replayed here is that old and a negative
// time is far more likely a unit mix-up.
const maxSeconds = math.MaxInt64 / int64(1e9)

func fromTime(t time.Time, s string) (int64, error) {
	if sec := t.Unix(); sec < 0 || sec >= maxSeconds {
		return 0, ingest.Errorf("time", "time %q outside 1970..2262", s)
	}
	return t.UnixNano(), nil
}

func unixSeconds(s string) (int64, error) {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if !strings.ContainsAny(s, "eE+-") && (!hasFrac || allDigits(frac)) && allDigits(intPart) && intPart != "" {
		sec, err := strconv.ParseInt(intPart, 10, 64)
		if err != nil || sec >= maxSeconds {
			if len(intPart) >= 12 && len(intPart) <= 19 {
				// 13 digits are milliseconds of this century, 16
				// microseconds, 19 nanoseconds: a unit is named, not guessed.
				return 0, ingest.Errorf("time", "time %q outside 1970..2262 as seconds: a time in ms, µs or ns must be given in seconds", s)
			}
			return 0, ingest.Errorf("time", "time %q outside 1970..2262", s)
		}
		var ns int64
		for i, scale := 0, int64(1e8); i < len(frac) && i < 9; i, scale = i+1, scale/10 {
			ns += int64(frac[i]-'0') * scale
		}
		return sec*1e9 + ns, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, ingest.Errorf("time", "time %q is not a number of seconds", s)
	}
	if f < 0 || f >= float64(maxSeconds) {
		return 0, ingest.Errorf("time", "time %q outside 1970..2262", s)
	}
	return int64(f * 1e9), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseValue(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "nan") || strings.EqualFold(s, "null") {
		return 0, errNoValue
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, ingest.Errorf("value", "value %q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, ingest.Errorf("value", "value %q is not finite", s)
	}
	return v, nil
}

// errNoValue is a line whose value is empty, NaN or null: a gap in the
// export (pandas writes a missing value so, and IODA's series have them),
// which is no reading rather than a bad one. It is still counted, under a
// reason of its own, so a file that is all gaps is noticed.
var errNoValue = ingest.Errorf(ingest.ReasonNoValue, "no value (a gap in the series)")

// JSONDecoder decodes one JSON observation per value.
type JSONDecoder struct {
	series *seriesCache
	o      obs.Observation
}

// NewJSONDecoder returns a decoder for JSON observation lines.
func NewJSONDecoder() *JSONDecoder { return &JSONDecoder{series: newSeriesCache()} }

type jsonLine struct {
	Time   json.RawMessage `json:"time"`
	Entity *string         `json:"entity"`
	Signal *string         `json:"signal"`
	Value  json.RawMessage `json:"value"`
}

// Decode implements ingest.Decoder.
func (d *JSONDecoder) Decode(value []byte, sink obs.Sink) error {
	var l jsonLine
	if err := json.Unmarshal(value, &l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return ingest.Errorf("field_type", "observation: field %q: want %v, have JSON %s", te.Field, te.Type, te.Value)
		}
		return ingest.Errorf("json", "observation: %v", err)
	}
	switch {
	case l.Time == nil:
		return ingest.Errorf("missing", "observation: no time")
	case l.Entity == nil:
		return ingest.Errorf("missing", "observation: no entity")
	case l.Signal == nil:
		return ingest.Errorf("missing", "observation: no signal")
	case l.Value == nil:
		return ingest.Errorf("missing", "observation: no value")
	}
	t, err := jsonTime(l.Time)
	if err != nil {
		return err
	}
	sig, err := lookupSignal(*l.Signal)
	if err != nil {
		return err
	}
	id, ent, err := d.series.resolve(sink, sig, *l.Entity)
	if err != nil {
		return err
	}
	v, err := jsonNumber(l.Value, "value")
	if err != nil {
		return err
	}
	d.series.observe(sink, &d.o, id, t, sig, *l.Entity, ent, v)
	return nil
}

// jsonTime reads the time member: a number of seconds or a string.
func jsonTime(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, ingest.Errorf("json", "observation: time: %v", err)
		}
		return ParseTime(s)
	}
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, ingest.Errorf("field_type", "observation: time is JSON %s, want a string or a number", raw)
	}
	return ParseTime(string(raw))
}

// jsonNumber reads a number, or a string holding one.
func jsonNumber(raw json.RawMessage, field string) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, ingest.Errorf("json", "observation: %s: %v", field, err)
		}
		return parseValue(s)
	}
	if string(raw) == "null" {
		return 0, errNoValue
	}
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, ingest.Errorf("field_type", "observation: %s is JSON %s, want a number", field, raw)
	}
	return parseValue(string(raw))
}

// CSVDecoder decodes one CSV observation line per value. The header row
// decodes to nothing, so that a file can be fed line by line as it is.
type CSVDecoder struct {
	series *seriesCache
	// lastTime and lastSignal are the last time and signal read, by
	// their text.
	lastTime struct {
		text []byte
		t    int64
		ok   bool
	}
	lastSignal struct {
		text []byte
		sig  obs.Signal
		ok   bool
	}
	fields [4]string
	buf    []byte
	o      obs.Observation
}

// NewCSVDecoder returns a decoder for CSV observation lines.
func NewCSVDecoder() *CSVDecoder { return &CSVDecoder{series: newSeriesCache()} }

// Decode implements ingest.Decoder.
func (d *CSVDecoder) Decode(value []byte, sink obs.Sink) error {
	f, err := d.split(value)
	if err != nil {
		return err
	}
	if isHeader(f) {
		return nil
	}
	t, err := d.time(f[0])
	if err != nil {
		return err
	}
	sig, err := d.signal(f[2])
	if err != nil {
		return err
	}
	id, ent, err := d.series.resolve(sink, sig, f[1])
	if err != nil {
		return err
	}
	v, err := parseValue(f[3])
	if err != nil {
		return err
	}
	d.series.observe(sink, &d.o, id, t, sig, f[1], ent, v)
	return nil
}

// time is ParseTime that remembers the last text it read: an export lists
// every entity of a bucket under the same time.
func (d *CSVDecoder) time(s string) (int64, error) {
	if d.lastTime.ok && string(d.lastTime.text) == s {
		return d.lastTime.t, nil
	}
	t, err := ParseTime(s)
	if err == nil {
		d.lastTime.text, d.lastTime.t, d.lastTime.ok = append(d.lastTime.text[:0], s...), t, true
	}
	return t, err
}

// signal is lookupSignal that remembers the last name it found: a name,
// once registered, always names the same signal, and the registry's
// lookup takes a lock.
func (d *CSVDecoder) signal(s string) (obs.Signal, error) {
	if d.lastSignal.ok && string(d.lastSignal.text) == s {
		return d.lastSignal.sig, nil
	}
	sig, err := lookupSignal(s)
	if err == nil {
		d.lastSignal.text, d.lastSignal.sig, d.lastSignal.ok = append(d.lastSignal.text[:0], s...), sig, true
	}
	return sig, err
}

func isHeader(f []string) bool {
	return strings.EqualFold(strings.TrimSpace(f[0]), "time") && strings.EqualFold(strings.TrimSpace(f[1]), "entity")
}

// split cuts one line into its four fields. The strings point into d.buf
// and are valid until the next call.
func (d *CSVDecoder) split(line []byte) ([]string, error) {
	line = bytes.TrimRight(line, "\r\n")
	d.buf = d.buf[:0]
	var ends [4]int
	n := 0
	for i := 0; ; {
		if n == 4 {
			return nil, ingest.Errorf("csv", "observation: more than 4 fields")
		}
		// Leading blanks before a quote are tolerated, as spreadsheets
		// write them.
		j := i
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		if j < len(line) && line[j] == '"' {
			i = j + 1
			for {
				k := bytes.IndexByte(line[i:], '"')
				if k < 0 {
					return nil, ingest.Errorf("csv", "observation: unterminated quoted field")
				}
				d.buf = append(d.buf, line[i:i+k]...)
				i += k + 1
				if i < len(line) && line[i] == '"' {
					d.buf = append(d.buf, '"')
					i++
					continue
				}
				break
			}
			for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
				i++
			}
			if i < len(line) && line[i] != ',' {
				return nil, ingest.Errorf("csv", "observation: text after a quoted field")
			}
		} else {
			k := bytes.IndexByte(line[i:], ',')
			if k < 0 {
				k = len(line) - i
			}
			if bytes.IndexByte(line[i:i+k], '"') >= 0 {
				return nil, ingest.Errorf("csv", "observation: quote inside an unquoted field")
			}
			d.buf = append(d.buf, line[i:i+k]...)
			i += k
		}
		ends[n] = len(d.buf)
		n++
		if i >= len(line) {
			break
		}
		i++ // the comma
	}
	if n != 4 {
		return nil, ingest.Errorf("csv", "observation: %d fields, want time,entity,signal,value", n)
	}
	// The fields are d.buf's bytes, not a copy: nothing that reads them
	// keeps them (a time or signal remembered, an entity cached, an error
	// message, each copies what it keeps), and the next line overwrites
	// them, so a line costs no allocation.
	all := unsafe.String(unsafe.SliceData(d.buf), len(d.buf))
	start := 0
	for k := range 4 {
		d.fields[k] = all[start:ends[k]]
		start = ends[k]
	}
	return d.fields[:], nil
}
