package quality

import (
	"net/netip"
	"strconv"
	"unicode/utf8"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/jsonstr"
	"github.com/outagewatch/outagewatch/ingest/timeparse"
)

// scanner reads the flat JSON objects of the quality feed without
// allocating: encoding/json spends more time and garbage on one measurement
// than the rest of the pipeline does on its observations. It is strict
// JSON (RFC 8259): anything it does not accept is a decode error, never a
// guess.
type scanner struct {
	b   []byte
	i   int
	buf []byte // unescaped strings
}

// maxDepth bounds the nesting of skipped values, so hostile input cannot
// exhaust the stack.
const maxDepth = 32

func (s *scanner) reset(b []byte) { s.b, s.i = b, 0 }

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' { // compact JSON: nearly always
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) syntax(what string) error {
	if s.i >= len(s.b) {
		return ingest.Errorf("json", "unexpected end of input, want %s", what)
	}
	return ingest.Errorf("json", "offset %d: unexpected %q, want %s", s.i, s.b[s.i], what)
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// end checks that nothing but white space follows the value.
func (s *scanner) end() error {
	if s.ws(); s.i != len(s.b) {
		return s.syntax("end of input")
	}
	return nil
}

// member reads the next key of an object and the colon after it; ok is
// false after the closing brace. first says whether this is the first
// member, where no comma precedes it.
func (s *scanner) member(first bool) (key []byte, ok bool, err error) {
	// Compact JSON (`,"key":`) takes the short way.
	if b, i := s.b, s.i; !first && i+1 < len(b) && b[i] == ',' && b[i+1] == '"' {
		s.i++
		if key, err = s.str(); err != nil {
			return nil, false, err
		}
		if s.i < len(s.b) && s.b[s.i] == ':' {
			s.i++
			return key, true, nil
		}
		if !s.consume(':') {
			return nil, false, s.syntax("':'")
		}
		return key, true, nil
	}
	if s.consume('}') {
		return nil, false, nil
	}
	if !first && !s.consume(',') {
		return nil, false, s.syntax("',' or '}'")
	}
	if s.peek() != '"' {
		return nil, false, s.syntax("object key")
	}
	if key, err = s.str(); err != nil {
		return nil, false, err
	}
	if !s.consume(':') {
		return nil, false, s.syntax("':'")
	}
	return key, true, nil
}

// elem advances to the next element of an array; ok is false after the
// closing bracket.
func (s *scanner) elem(first bool) (ok bool, err error) {
	if s.consume(']') {
		return false, nil
	}
	if !first && !s.consume(',') {
		return false, s.syntax("',' or ']'")
	}
	return true, nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.syntax(lit)
	}
	s.i += len(lit)
	return nil
}

// str reads a string and returns its contents. The slice points into the
// input, or into the scanner's buffer when the string has escapes; either
// way it is valid only until the next call.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.notA("string")
	}
	s.i++
	start, b := s.i, s.b
	i := s.i
	for i < len(b) && !strSpecial[b[i]] {
		i++
	}
	s.i = i
	switch {
	case i == len(b):
		return nil, s.syntax("'\"'")
	case b[i] == '"':
		s.i++
		return b[start:i], nil
	case b[i] == '\\':
		return s.unescape(start)
	}
	return nil, s.syntax("string character")
}

// strSpecial marks the bytes that end the fast scan of a string.
var strSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// unescape finishes a string that has escapes, from its first backslash
// at s.i: it finds the closing quote, then resolves the escapes into the
// scanner's buffer.
func (s *scanner) unescape(start int) ([]byte, error) {
	b := s.b
	for i := s.i; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			out, ok := jsonstr.Unescape(s.buf[:0], b[start:i])
			s.buf = out[:0]
			switch {
			case !ok:
				return nil, ingest.Errorf("json", "offset %d: the string has an escape JSON does not have", start-1)
			case !utf8.Valid(out):
				return nil, ingest.Errorf("json", "string is not UTF-8")
			}
			s.i = i + 1
			return out, nil
		case c == '\\':
			i++
		case c < 0x20:
			s.i = i
			return nil, s.syntax("string character")
		}
	}
	s.i = len(b)
	return nil, s.syntax("'\"'")
}

// number reads a JSON number and returns its text; frac says whether it
// has a fraction or an exponent.
func (s *scanner) number() (tok []byte, frac bool, err error) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, false, s.notA("number")
	}
	b, start := s.b, s.i
	i := s.i
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.i = i
		return nil, false, s.syntax("digit")
	}
	if i < len(b) && b[i] == '.' {
		i++
		frac = true
		if !digits() {
			s.i = i
			return nil, false, s.syntax("digit")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		frac = true
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.i = i
			return nil, false, s.syntax("digit")
		}
	}
	s.i = i
	return b[start:i], frac, nil
}

// float reads a finite number.
func (s *scanner) float() (float64, error) {
	tok, _, err := s.number()
	if err != nil {
		return 0, err
	}
	if v, ok := exactFloat(tok); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, ingest.Errorf("value_range", "number %.40s out of range", tok)
	}
	return v, nil
}

// uint reads a non-negative integer no larger than max.
func (s *scanner) uint(max uint64) (uint64, error) {
	// Fast path: plain digits followed by a delimiter, as writers of
	// counts and AS numbers produce them.
	if b, i := s.b, s.i; i < len(b) && '1' <= b[i] && b[i] <= '9' {
		var v uint64
		j := i
		for j < len(b) && j-i < 19 && '0' <= b[j] && b[j] <= '9' {
			v = v*10 + uint64(b[j]-'0')
			j++
		}
		if j < len(b) && (b[j] == ',' || b[j] == '}' || b[j] == ']') && v <= max {
			s.i = j
			return v, nil
		}
	}
	tok, frac, err := s.number()
	if err != nil {
		return 0, err
	}
	if frac || tok[0] == '-' {
		return 0, fieldType("non-negative integer")
	}
	if v, ok := parseDigits(tok, max); ok {
		return v, nil
	}
	return 0, ingest.Errorf("value_range", "integer %.40s out of range", tok)
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactFloat converts the common short decimals ("22.4", "-0.125") without
// strconv: with at most 15 significant digits the mantissa and the power of
// ten are both exact in a float64, so one correctly rounded division gives
// the same result as strconv.ParseFloat (Clinger's fast path). ok is false
// for anything else (exponents, long mantissas), which the caller hands to
// strconv. tok has already passed number's grammar check.
func exactFloat(tok []byte) (float64, bool) {
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	var mant uint64
	digits, scale := 0, -1
	for i, c := range tok {
		switch {
		case '0' <= c && c <= '9':
			mant = mant*10 + uint64(c-'0')
			if mant != 0 {
				digits++
			}
		case c == '.':
			scale = len(tok) - i - 1
		default:
			return 0, false // exponent
		}
	}
	if digits > 15 || scale >= len(pow10) {
		return 0, false
	}
	v := float64(mant)
	if scale > 0 {
		v /= pow10[scale]
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseDigits parses a string of decimal digits no larger than max.
func parseDigits(b []byte, max uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, v <= max
}

// skip reads and discards any value.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return ingest.Errorf("json", "nesting deeper than %d", maxDepth)
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		s.i++
		for first := true; ; first = false {
			_, ok, err := s.member(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == '[':
		s.i++
		for first := true; ; first = false {
			ok, err := s.elem(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, _, err := s.number()
		return err
	}
	return s.syntax("value")
}

// addr reads a string holding an IP address. IPv4, the common case, is
// parsed here without allocating.
func (s *scanner) addr() (netip.Addr, error) {
	b, err := s.str()
	if err != nil {
		return netip.Addr{}, err
	}
	return parseAddr(b)
}

// parseAddr parses an IPv4 or IPv6 address, its zone left out.
func parseAddr(b []byte) (netip.Addr, error) {
	if a, ok := parseIPv4(b); ok {
		return a, nil
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil {
		return netip.Addr{}, ingest.Errorf("address", "%.60q is not an IP address", b)
	}
	return a.WithZone(""), nil
}

// optAddr is addr where an empty string is no address: RIPE Atlas writes
// "from": "" for a probe whose public address it does not know (an IPv6
// measurement from a probe with no public IPv6 address), and the result
// is as good as any other, only not attributed to a network.
func (s *scanner) optAddr() (netip.Addr, error) {
	b, err := s.str()
	if err != nil || len(b) == 0 {
		return netip.Addr{}, err
	}
	return parseAddr(b)
}

func parseIPv4(b []byte) (netip.Addr, bool) {
	var out [4]byte
	k, n, digits := 0, 0, 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			if digits > 0 && n == 0 { // leading zero
				return netip.Addr{}, false
			}
			n = n*10 + int(c-'0')
			digits++
			if n > 255 {
				return netip.Addr{}, false
			}
		case c == '.' && digits > 0 && k < 3:
			out[k] = byte(n)
			k, n, digits = k+1, 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if k != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	out[3] = byte(n)
	return netip.AddrFrom4(out), true
}

// Event times are accepted between 1970 and 2255 (Unix seconds below 9e9,
// which keeps Unix nanoseconds inside an int64): a larger number is almost
// always milliseconds sent where seconds were meant, and is refused rather
// than bucketed centuries away.
const maxUnixSeconds = 9e9

// timestamp reads an event time, RFC 3339 text or Unix seconds (fractions
// allowed), as Unix nanoseconds.
func (s *scanner) timestamp() (int64, error) {
	if s.peek() == '"' {
		b, err := s.str()
		if err != nil {
			return 0, err
		}
		return parseRFC3339(b)
	}
	tok, frac, err := s.number()
	if err != nil {
		return 0, ingest.Errorf("field_type", "time: want RFC 3339 string or Unix seconds")
	}
	if tok[0] == '-' {
		return 0, ingest.Errorf("time", "time %s before 1970", tok)
	}
	if !frac {
		sec, ok := parseDigits(tok, maxUnixSeconds-1)
		if !ok {
			return 0, ingest.Errorf("time", "time %.40s out of range (want Unix seconds)", tok)
		}
		return int64(sec) * 1e9, nil
	}
	// Exact for a plain decimal ("1745836500.25"), where a float64 would
	// give 1745836500249999872. JSON numbers have no leading zeros, so the
	// range check also bounds the number of digits.
	if sec, nsec, ok := timeparse.UnixSeconds(tok); ok && sec < maxUnixSeconds {
		return sec*1e9 + nsec, nil
	}
	f, err := strconv.ParseFloat(string(tok), 64) // with an exponent
	if err != nil || !(f >= 0 && f < maxUnixSeconds) {
		return 0, ingest.Errorf("time", "time %.40s out of range (want Unix seconds)", tok)
	}
	return int64(f * 1e9), nil
}

// parseRFC3339 parses "2025-04-28T10:33:00Z" with optional fraction and
// numeric offset, without allocating (time.Parse would need a string).
func parseRFC3339(b []byte) (int64, error) {
	unix, nanos, ok := timeparse.RFC3339(b, timeparse.LowerCase|timeparse.LongFraction)
	if !ok {
		return 0, ingest.Errorf("time", "%.60q is not an RFC 3339 time", b)
	}
	if unix < 0 || unix >= maxUnixSeconds {
		return 0, ingest.Errorf("time", "%.60q out of range", b)
	}
	return unix*1e9 + nanos, nil
}

// notA reports that the next value is not of the wanted type: a field_type
// error when a value of another type follows, a syntax error otherwise.
func (s *scanner) notA(want string) error {
	switch s.peek() {
	case '"', '{', '[', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return fieldType(want)
	}
	return s.syntax(want)
}

func fieldType(want string) error {
	return ingest.Errorf("field_type", "want %s", want)
}
