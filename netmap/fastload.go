package netmap

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// fileMagic starts every file Write writes. LoadFile reads such a file
// line by line: YAML decoding of a full table (a million prefixes, 30 MB)
// takes minutes, this takes seconds. Anything this reader does not expect
// sends the file through the YAML decoder instead, which also gives the
// line of a mistake.
const fileMagic = "# outagewatch mapping file v1"

var errNotFast = errors.New("not in the line format")

// loadFast reads a file written by Write into m.
func loadFast(m *Map, b []byte) error {
	section := ""
	for n := 1; len(b) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		s := strings.TrimRight(string(line), "\r")
		switch {
		case s == "" || s[0] == '#':
			continue
		case s == "asns:" || s == "asns: {}":
			section = "asns"
			continue
		case s == "prefixes:" || s == "prefixes: []":
			section = "prefixes"
			continue
		}
		var err error
		switch {
		case section == "asns" && strings.HasPrefix(s, "  ") && !strings.HasPrefix(s, "  -"):
			err = fastASN(m, s[2:])
		case section == "prefixes" && strings.HasPrefix(s, "  - "):
			err = fastPrefix(m, s[4:])
		default:
			err = errNotFast
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return nil
}

// fields reads "{k: v, k: "quoted, v"}" into key/value pairs.
func fields(s string, fn func(k, v string) error) error {
	s, ok := strings.CutPrefix(s, "{")
	if !ok || !strings.HasSuffix(s, "}") {
		return errNotFast
	}
	s = s[:len(s)-1]
	for s != "" {
		k, rest, ok := strings.Cut(s, ": ")
		if !ok {
			return errNotFast
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return errNotFast
			}
			if v, err = strconv.Unquote(q); err != nil {
				return errNotFast
			}
			rest = rest[len(q):]
		} else {
			i := strings.IndexByte(rest, ',')
			if i < 0 {
				i = len(rest)
			}
			v, rest = rest[:i], rest[i:]
		}
		if err := fn(k, v); err != nil {
			return err
		}
		if rest == "" {
			break
		}
		s, ok = strings.CutPrefix(rest, ", ")
		if !ok {
			return errNotFast
		}
	}
	return nil
}

func fastASN(m *Map, s string) error {
	num, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return errNotFast
	}
	asn, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return errNotFast
	}
	return fields(rest, func(k, v string) error {
		switch k {
		case "country":
			if len(v) != 2 {
				return fmt.Errorf("AS%d: country %q is not a two-letter code", asn, v)
			}
			m.Countries[uint32(asn)] = strings.ToUpper(v)
		case "name":
			if v != "" { // as the YAML reader: an empty name is none
				m.Names[uint32(asn)] = v
			}
		default:
			return errNotFast
		}
		return nil
	})
}

func fastPrefix(m *Map, s string) error {
	var p netip.Prefix
	var origin uint32
	var country, region string
	err := fields(s, func(k, v string) error {
		switch k {
		case "prefix":
			var err error
			if p, err = netip.ParsePrefix(v); err != nil {
				return err
			}
		case "origin":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return errNotFast
			}
			origin = uint32(n)
		case "country":
			if len(v) != 2 {
				return fmt.Errorf("%s: country %q is not a two-letter code", s, v)
			}
			country = strings.ToUpper(v)
		case "region":
			region = strings.ToUpper(v)
		default:
			return errNotFast
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !p.IsValid() {
		return errNotFast
	}
	if origin != 0 {
		m.Origins.Insert(p, origin)
	}
	if country != "" {
		m.PrefixCountries.Insert(p, country)
	}
	if region != "" {
		m.Regions.Insert(p, region)
	}
	return nil
}
