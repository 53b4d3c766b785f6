package mapdata

import (
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/netmap"
)

// maxASNRange bounds one asn record's count: real files delegate at most a
// few thousand numbers at once, and a corrupt count must not loop for ever.
const maxASNRange = 1 << 16

// ReadDelegated reads a Regional Internet Registry's delegation statistics
// (delegated-<rir>-latest and delegated-<rir>-extended-latest):
//
//	2|afrinic|20240105|15814|00000000|20240105|00000     version line
//	afrinic|*|asn|*|3326|summary                          summary lines
//	afrinic|ZA|asn|1228|1|19910301|allocated|F36B9F4B     records
//
// A record's cc becomes the country of its AS numbers (asn: start and
// count) or of its prefixes (ipv4: start and number of addresses, any
// count, not only powers of two; ipv6: start and prefix length). Only
// allocated and assigned records count; available and reserved space has
// no country. The extended form's opaque-id and any later fields are
// ignored. The serial in the version line is a date (YYYYMMDD) in most
// files, but RIPE NCC's plain file has carried a Unix time there; both are
// read.
func ReadDelegated(r io.Reader, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "delegated"}
	seenVersion := false
	want := map[string]int{}
	got := map[string]int{}
	err := lines(r, func(n int, line string) {
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			return
		}
		f := strings.Split(line, "|")
		if !seenVersion && len(f) >= 3 && f[0] != "" && f[0][0] >= '0' && f[0][0] <= '9' {
			seenVersion = true
			if t, ok := serialTime(f[2]); ok {
				st.Notes = append(st.Notes, fmt.Sprintf("registry %s, serial %s (%s)", f[1], f[2], t.Format("2006-01-02")))
			} else {
				st.Notes = append(st.Notes, fmt.Sprintf("registry %s, serial %q: neither a date nor a Unix time", f[1], f[2]))
			}
			return
		}
		if len(f) >= 6 && f[1] == "*" && f[5] == "summary" {
			c, err := strconv.Atoi(f[4])
			if err != nil {
				st.skip(n, "summary count %q: not a number", f[4])
				return
			}
			want[f[2]] = c
			return
		}
		st.Lines++
		if len(f) < 7 {
			st.skip(n, "%d fields, want at least 7 (registry|cc|type|start|value|date|status)", len(f))
			return
		}
		typ, start, value, status := f[2], f[3], f[4], strings.ToLower(f[6])
		got[typ]++
		if status != "allocated" && status != "assigned" {
			return
		}
		cc, ok := countryCode(f[1])
		if !ok {
			if f[1] != "" {
				st.skip(n, "country %q: not a two-letter code", f[1])
			}
			return
		}
		count, err := strconv.ParseUint(value, 10, 64)
		if err != nil || count == 0 {
			st.skip(n, "value %q: not a positive number", value)
			return
		}
		switch typ {
		case "asn":
			first, err := strconv.ParseUint(start, 10, 32)
			if err != nil || count > maxASNRange || first+count-1 > 1<<32-1 {
				st.skip(n, "asn %s count %s: not a range of AS numbers", start, value)
				return
			}
			for a := first; a < first+count; a++ {
				m.Countries[uint32(a)] = cc
				st.Countries++
			}
		case "ipv4":
			a, err := netip.ParseAddr(start)
			if err != nil || !a.Is4() || count > 1<<32 {
				st.skip(n, "ipv4 %s count %s: not an IPv4 block", start, value)
				return
			}
			last, ok := addN(a, count-1)
			if !ok {
				st.skip(n, "ipv4 %s count %s: runs past the end of the address space", start, value)
				return
			}
			for _, p := range rangePrefixes(a, last) {
				m.PrefixCountries.Insert(p, cc)
				st.PrefixCountries++
			}
		case "ipv6":
			a, err := netip.ParseAddr(start)
			if err != nil || !a.Is6() || count > 128 {
				st.skip(n, "ipv6 %s/%s: not an IPv6 prefix", start, value)
				return
			}
			m.PrefixCountries.Insert(netip.PrefixFrom(a, int(count)).Masked(), cc)
			st.PrefixCountries++
		default:
			st.skip(n, "type %q: want asn, ipv4 or ipv6", typ)
		}
	})
	for _, typ := range []string{"asn", "ipv4", "ipv6"} {
		if w, ok := want[typ]; ok && w != got[typ] {
			st.Notes = append(st.Notes, fmt.Sprintf("summary says %d %s records, the file has %d (a partial copy?)", w, typ, got[typ]))
		}
	}
	return st, err
}

// serialTime reads a version line's serial: YYYYMMDD, or a Unix time.
func serialTime(s string) (time.Time, bool) {
	if len(s) == 8 {
		if t, err := time.Parse("20060102", s); err == nil {
			return t, true
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < 1<<33 {
		return time.Unix(n, 0).UTC(), true
	}
	return time.Time{}, false
}

// addN returns a+n, and false if that leaves a's address family.
func addN(a netip.Addr, n uint64) (netip.Addr, bool) {
	b := a.AsSlice()
	x := new(big.Int).SetBytes(b)
	x.Add(x, new(big.Int).SetUint64(n))
	if x.BitLen() > len(b)*8 {
		return netip.Addr{}, false
	}
	out := make([]byte, len(b))
	x.FillBytes(out)
	r, _ := netip.AddrFromSlice(out)
	return r, true
}
