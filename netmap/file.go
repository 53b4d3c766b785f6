package netmap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/internal/yamlerr"
)

// mapFile is the YAML form of a mapping file:
//
//	asns:
//	  5089: {country: GB, name: Virgin Media}
//	prefixes:
//	  - {prefix: 62.252.0.0/14, origin: 5089, country: GB, region: GB-ENG}
type mapFile struct {
	ASNs map[uint32]struct {
		Country string `yaml:"country"`
		Name    string `yaml:"name"`
	} `yaml:"asns"`
	Prefixes []struct {
		Prefix  string `yaml:"prefix"`
		Origin  uint32 `yaml:"origin"`
		Country string `yaml:"country"`
		Region  string `yaml:"region"`
	} `yaml:"prefixes"`
}

// LoadFile reads a mapping file into m (which it returns, new if nil).
// Errors name the file and the entry.
func LoadFile(m *Map, file string) (*Map, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	if m == nil {
		m = New()
	}
	if bytes.HasPrefix(b, []byte(fileMagic)) {
		fresh := New()
		err := loadFast(fresh, b)
		if err == nil {
			mergeInto(m, fresh)
			return m, nil
		}
		if !errors.Is(err, errNotFast) {
			return nil, fmt.Errorf("mapping %s: %w", file, err)
		}
		// Edited by hand: the YAML decoder reads it and says where it is wrong.
	}
	var f mapFile
	if err := yamlerr.Decode(file, b, &f); err != nil {
		return nil, fmt.Errorf("mapping %w", err)
	}
	for asn, a := range f.ASNs {
		if len(a.Country) != 2 && a.Country != "" {
			return nil, fmt.Errorf("mapping %s: AS%d: country %q is not a two-letter code", file, asn, a.Country)
		}
		if a.Country != "" {
			m.Countries[asn] = strings.ToUpper(a.Country)
		}
		if a.Name != "" {
			m.Names[asn] = a.Name
		}
	}
	for i, p := range f.Prefixes {
		pfx, err := netip.ParsePrefix(p.Prefix)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: prefixes[%d]: %w", file, i, err)
		}
		if len(p.Country) != 2 && p.Country != "" {
			return nil, fmt.Errorf("mapping %s: prefixes[%d]: country %q is not a two-letter code", file, i, p.Country)
		}
		if p.Origin != 0 {
			m.Origins.Insert(pfx, p.Origin)
		}
		if p.Country != "" {
			m.PrefixCountries.Insert(pfx, strings.ToUpper(p.Country))
		}
		if p.Region != "" {
			m.Regions.Insert(pfx, strings.ToUpper(p.Region))
		}
	}
	return m, nil
}

// Write writes m as a mapping file that LoadFile reads back, one entry a
// line in flow style, sorted (AS numbers, then prefixes IPv4 first), so the
// same data always gives the same bytes and a diff between two builds reads
// as what changed. header lines become comments at the top.
func Write(w io.Writer, m *Map, header ...string) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(fileMagic + ": one entry a line, read fast by outagewatch; still YAML\n")
	for _, h := range header {
		for _, l := range strings.Split(h, "\n") {
			bw.WriteString("# " + l + "\n")
		}
	}
	asns := make([]uint32, 0, len(m.Names)+len(m.Countries))
	for a := range m.Names {
		asns = append(asns, a)
	}
	for a := range m.Countries {
		if _, ok := m.Names[a]; !ok {
			asns = append(asns, a)
		}
	}
	slices.Sort(asns)
	if len(asns) == 0 {
		bw.WriteString("asns: {}\n")
	} else {
		bw.WriteString("asns:\n")
	}
	for _, a := range asns {
		bw.WriteString("  " + strconv.FormatUint(uint64(a), 10) + ": {")
		sep := ""
		if c := m.Countries[a]; c != "" {
			bw.WriteString("country: " + c)
			sep = ", "
		}
		if n := m.Names[a]; n != "" {
			bw.WriteString(sep + "name: " + quote(n))
		}
		bw.WriteString("}\n")
	}
	type entry struct {
		origin          uint32
		country, region string
	}
	var pfx []netip.Prefix
	entries := map[netip.Prefix]*entry{}
	get := func(p netip.Prefix) *entry {
		e, ok := entries[p]
		if !ok {
			e = &entry{}
			entries[p] = e
			pfx = append(pfx, p)
		}
		return e
	}
	m.Origins.Walk(func(p netip.Prefix, v uint32) bool { get(p).origin = v; return true })
	m.PrefixCountries.Walk(func(p netip.Prefix, v string) bool { get(p).country = v; return true })
	m.Regions.Walk(func(p netip.Prefix, v string) bool { get(p).region = v; return true })
	slices.SortFunc(pfx, comparePrefix)
	if len(pfx) == 0 {
		bw.WriteString("prefixes: []\n")
	} else {
		bw.WriteString("prefixes:\n")
	}
	for _, p := range pfx {
		e := entries[p]
		// Quoted: an IPv6 prefix may start with "::".
		bw.WriteString("  - {prefix: \"" + p.String() + "\"")
		if e.origin != 0 {
			bw.WriteString(", origin: " + strconv.FormatUint(uint64(e.origin), 10))
		}
		if e.country != "" {
			bw.WriteString(", country: " + e.country)
		}
		if e.region != "" {
			bw.WriteString(", region: " + quote(e.region))
		}
		bw.WriteString("}\n")
	}
	return bw.Flush()
}

// mergeInto adds src's entries to dst (a file loaded on top of a map).
func mergeInto(dst, src *Map) {
	if len(dst.Names) == 0 && len(dst.Countries) == 0 && dst.Origins.Len() == 0 && dst.PrefixCountries.Len() == 0 && dst.Regions.Len() == 0 {
		dst.Replace(src)
		return
	}
	for k, v := range src.Countries {
		dst.Countries[k] = v
	}
	for k, v := range src.Names {
		dst.Names[k] = v
	}
	src.Origins.Walk(func(p netip.Prefix, v uint32) bool { dst.Origins.Insert(p, v); return true })
	src.PrefixCountries.Walk(func(p netip.Prefix, v string) bool { dst.PrefixCountries.Insert(p, v); return true })
	src.Regions.Walk(func(p netip.Prefix, v string) bool { dst.Regions.Insert(p, v); return true })
}

// comparePrefix orders IPv4 before IPv6, then by address, then shorter
// prefixes first.
func comparePrefix(a, b netip.Prefix) int {
	if a.Addr().Is4() != b.Addr().Is4() {
		if a.Addr().Is4() {
			return -1
		}
		return 1
	}
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// quote returns s as a YAML double-quoted scalar. Go's escapes (\n, \t,
// \u0080, \x00) are YAML's too, and quoting every name keeps "NO" or "1e3"
// from being read as a boolean or a number.
func quote(s string) string { return strconv.Quote(s) }
