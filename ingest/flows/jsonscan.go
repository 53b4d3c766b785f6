package flows

import "errors"

// scanner is a small strict JSON reader over one value. It exists because
// flow records arrive by the hundred thousand a second and encoding/json
// spends most of its time on reflection and on fields nobody reads; this
// reader looks at each byte once and never allocates. It accepts only what
// RFC 8259 allows (checked against encoding/json.Valid by the fuzz test).
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds the nesting of skipped values, so that a hostile record
// cannot exhaust the stack.
const maxDepth = 64

var (
	errSyntax = errors.New("invalid JSON")
	errDepth  = errors.New("JSON nested too deeply")
)

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a string whose opening quote is at s.i and returns its raw
// content, and whether that content holds escapes (see unescape).
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	s.i++
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return nil, false, errSyntax
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(s.b) {
					return nil, false, errSyntax
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if hexVal(h) < 0 {
						return nil, false, errSyntax
					}
				}
				s.i += 5
			default:
				return nil, false, errSyntax
			}
		case c < 0x20:
			return nil, false, errSyntax
		default:
			s.i++
		}
	}
	return nil, false, errSyntax
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// num reads a number at s.i and returns its text and whether it is an
// integer (no fraction, no exponent).
func (s *scanner) num() (raw []byte, isInt bool, err error) {
	start := s.i
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, errSyntax
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, errSyntax
		}
	}
	s.i = i
	return b[start:i], isInt, nil
}

// literal reads true, false or null.
func (s *scanner) literal() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return nil
		}
	}
	return errSyntax
}

// skip reads and checks any value.
func (s *scanner) skip() error {
	switch s.peek() {
	case '"':
		_, _, err := s.str()
		return err
	case '{':
		return s.container('}')
	case '[':
		return s.container(']')
	case 't', 'f', 'n':
		return s.literal()
	case 0:
		return errSyntax
	default:
		_, _, err := s.num()
		return err
	}
}

// container skips an object or array whose opening bracket is at s.i.
func (s *scanner) container(end byte) error {
	s.depth++
	if s.depth > maxDepth {
		return errDepth
	}
	s.i++
	if s.peek() == end {
		s.i++
		s.depth--
		return nil
	}
	for {
		if end == '}' {
			if s.peek() != '"' {
				return errSyntax
			}
			if _, _, err := s.str(); err != nil {
				return err
			}
			if s.peek() != ':' {
				return errSyntax
			}
			s.i++
		}
		if err := s.skip(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case end:
			s.i++
			s.depth--
			return nil
		default:
			return errSyntax
		}
	}
}

// parseUint parses the digits of an integer token; ok is false on overflow
// or a sign.
func parseUint(raw []byte) (v uint64, ok bool) {
	if len(raw) == 0 || raw[0] == '-' {
		return 0, false
	}
	for _, c := range raw {
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
