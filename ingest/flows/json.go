package flows

import (
	"errors"
	"math"
	"net/netip"
	"strconv"
	"unsafe"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/jsonstr"
	"github.com/outagewatch/outagewatch/obs"
)

// JSONDecoder decodes goflow2's JSON output, one object per value.
//
// goflow2 v2 names fields after the protobuf (time_received_ns,
// sampling_rate, src_as, bytes, src_addr...); goflow2 v1 used Go names
// (TimeReceived in seconds, SamplingRate, SrcAS, Bytes, SrcAddr...). Keys are
// matched ignoring case and underscores, so both read the same. Times may be
// numbers or, when goflow2's datetime renderers are configured, RFC 3339
// strings. Unknown fields are checked for syntax and ignored; null reads as
// absent.
type JSONDecoder struct {
	attributor
	// keyBuf and valBuf hold unescaped keys and strings, reused so that
	// even escaped input does not allocate once they have grown.
	keyBuf, valBuf []byte
}

// NewJSONDecoder returns a decoder for goflow2 JSON records.
func NewJSONDecoder(cfg Config) *JSONDecoder {
	return &JSONDecoder{attributor: newAttributor(cfg)}
}

// Stats returns the counts so far.
func (d *JSONDecoder) Stats() Stats { return d.stats }

// Decode implements ingest.Decoder.
func (d *JSONDecoder) Decode(value []byte, sink obs.Sink) error {
	var r record
	if err := d.parse(value, &r); err != nil {
		return err
	}
	d.emit(&r, sink)
	return nil
}

type jsonField uint8

const (
	jUnknown jsonField = iota
	jTimeReceivedNs
	jTimeReceivedMs
	jTimeReceived // seconds
	jTimeFlowEndNs
	jTimeFlowEndMs
	jTimeFlowEnd // seconds
	jSamplingRate
	jBytes
	jPackets
	jSrcAS
	jDstAS
	jSrcAddr
	jDstAddr
)

// fieldOf maps a key, lower-cased and without underscores, to its field.
func fieldOf(norm []byte) jsonField {
	switch string(norm) {
	case "timereceivedns":
		return jTimeReceivedNs
	case "timereceivedms":
		return jTimeReceivedMs
	case "timereceived":
		return jTimeReceived
	case "timeflowendns":
		return jTimeFlowEndNs
	case "timeflowendms":
		return jTimeFlowEndMs
	case "timeflowend":
		return jTimeFlowEnd
	case "samplingrate":
		return jSamplingRate
	case "bytes":
		return jBytes
	case "packets":
		return jPackets
	case "srcas":
		return jSrcAS
	case "dstas":
		return jDstAS
	case "srcaddr":
		return jSrcAddr
	case "dstaddr":
		return jDstAddr
	}
	return jUnknown
}

// normalize lower-cases key and drops underscores into buf; keys longer than
// any known field come back empty.
func normalize(buf *[24]byte, key []byte) []byte {
	n := 0
	for _, c := range key {
		if c == '_' {
			continue
		}
		if n == len(buf) {
			return nil
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

var (
	errFieldType = errors.New("wrong type")
	errValue     = errors.New("out of range")
)

func (d *JSONDecoder) parse(value []byte, r *record) error {
	s := scanner{b: value}
	if s.peek() != '{' {
		return ingest.Errorf("json", "flow record: not a JSON object")
	}
	s.i++
	var recvNs, endNs int64
	var norm [24]byte
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			if s.peek() != '"' {
				return ingest.Errorf("json", "flow record: %v at offset %d", errSyntax, s.i)
			}
			key, escaped, err := s.str()
			if err != nil {
				return ingest.Errorf("json", "flow record: %v at offset %d", err, s.i)
			}
			if escaped {
				d.keyBuf, _ = jsonstr.Unescape(d.keyBuf[:0], key) // str checked its escapes
				key = d.keyBuf
			}
			if s.peek() != ':' {
				return ingest.Errorf("json", "flow record: %v at offset %d", errSyntax, s.i)
			}
			s.i++
			f := fieldOf(normalize(&norm, key))
			if err := d.field(&s, f, r, &recvNs, &endNs); err != nil {
				var ie *ingest.Error
				if errors.As(err, &ie) {
					return err
				}
				reason := "json"
				switch err {
				case errFieldType:
					reason = "field_type"
				case errValue:
					reason = "value"
				}
				return ingest.Errorf(reason, "flow record: field %q: %v", key, err)
			}
			c := s.peek()
			s.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return ingest.Errorf("json", "flow record: %v at offset %d", errSyntax, s.i-1)
			}
		}
	}
	if s.ws(); s.i < len(s.b) {
		return ingest.Errorf("json", "flow record: data after the object at offset %d", s.i)
	}
	r.timeNs = recvNs
	if r.timeNs == 0 {
		r.timeNs = endNs
	}
	if r.timeNs == 0 {
		return ingest.Errorf("time", "flow record: neither time_received_ns nor time_flow_end_ns")
	}
	return nil
}

// field reads the value of one field.
func (d *JSONDecoder) field(s *scanner, f jsonField, r *record, recvNs, endNs *int64) error {
	if f == jUnknown {
		return s.skip()
	}
	switch c := s.peek(); {
	case c == 'n':
		// null: the field is absent.
		return s.literal()
	case c == '"':
		raw, escaped, err := s.str()
		if err != nil {
			return err
		}
		if escaped {
			d.valBuf, _ = jsonstr.Unescape(d.valBuf[:0], raw)
			raw = d.valBuf
		}
		switch f {
		case jSrcAddr, jDstAddr:
			return setAddr(r, f, raw)
		case jTimeReceivedNs, jTimeReceivedMs, jTimeReceived:
			return setTime(recvNs, raw)
		case jTimeFlowEndNs, jTimeFlowEndMs, jTimeFlowEnd:
			return setTime(endNs, raw)
		}
		return errFieldType
	case c == '-' || (c >= '0' && c <= '9'):
		raw, isInt, err := s.num()
		if err != nil {
			return err
		}
		switch f {
		case jSamplingRate, jBytes, jPackets:
			v, err := toFloat(raw, isInt)
			if err != nil {
				return err
			}
			switch f {
			case jSamplingRate:
				r.rate = v
			case jBytes:
				r.bytes = v
			default:
				r.packets = v
			}
			return nil
		case jSrcAS, jDstAS:
			v, err := toFloat(raw, isInt)
			if err != nil {
				return err
			}
			if v != math.Trunc(v) || v > math.MaxUint32 {
				return errValue
			}
			if f == jSrcAS {
				r.srcAS = uint32(v)
			} else {
				r.dstAS = uint32(v)
			}
			return nil
		case jTimeReceivedNs:
			return numTime(recvNs, raw, isInt, 1)
		case jTimeReceivedMs:
			return numTime(recvNs, raw, isInt, 1e6)
		case jTimeReceived:
			return numTime(recvNs, raw, isInt, 1e9)
		case jTimeFlowEndNs:
			return numTime(endNs, raw, isInt, 1)
		case jTimeFlowEndMs:
			return numTime(endNs, raw, isInt, 1e6)
		case jTimeFlowEnd:
			return numTime(endNs, raw, isInt, 1e9)
		}
		return errFieldType
	case c == 0:
		return errSyntax
	default:
		// An object, array or boolean where a number or string belongs.
		if err := s.skip(); err != nil {
			return err
		}
		return errFieldType
	}
}

// str views b as a string without copying; the result must not outlive b
// and is only passed to functions that do not keep it.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func toFloat(raw []byte, isInt bool) (float64, error) {
	if isInt {
		if u, ok := parseUint(raw); ok {
			return float64(u), nil
		}
	}
	f, err := strconv.ParseFloat(str(raw), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errValue
	}
	return f, nil
}

func numTime(dst *int64, raw []byte, isInt bool, unit int64) error {
	if isInt {
		if u, ok := parseUint(raw); ok {
			if u > uint64(math.MaxInt64/unit) {
				return ingest.Errorf("time", "flow record: time %s out of range", raw)
			}
			*dst = int64(u) * unit
			return nil
		}
	}
	f, err := toFloat(raw, false)
	if err != nil {
		return err
	}
	ns := f * float64(unit)
	if ns >= math.MaxInt64 {
		return ingest.Errorf("time", "flow record: time %s out of range", raw)
	}
	*dst = int64(ns)
	return nil
}

func setTime(dst *int64, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	ns, ok := parseRFC3339(raw)
	if !ok {
		return ingest.Errorf("time", "flow record: time %q is not RFC 3339", raw)
	}
	*dst = ns
	return nil
}

func setAddr(r *record, f jsonField, raw []byte) error {
	var a netip.Addr
	if len(raw) > 0 {
		// A zone is never part of a flow address, and rejecting it keeps
		// ParseAddr from holding on to the borrowed string.
		for _, c := range raw {
			if c == '%' {
				return ingest.Errorf("addr", "flow record: address %q has a zone", raw)
			}
		}
		var err error
		a, err = netip.ParseAddr(str(raw))
		if err != nil {
			return ingest.Errorf("addr", "flow record: address %q: not an IP address", raw)
		}
	}
	if f == jSrcAddr {
		r.srcAddr = a
	} else {
		r.dstAddr = a
	}
	return nil
}
