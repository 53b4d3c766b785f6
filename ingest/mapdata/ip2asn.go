package mapdata

import (
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/netmap"
)

// ReadIP2ASN reads iptoasn.com's ip2asn TSV (ip2asn-v4.tsv, -v6, -combined):
//
//	range_start<TAB>range_end<TAB>AS_number<TAB>country_code<TAB>AS_description
//
// Each range becomes the prefixes that cover it exactly, with the origin
// and the country; the description names the AS. AS 0 marks a range
// nobody announces: it gives no origin.
func ReadIP2ASN(r io.Reader, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "ip2asn"}
	err := lines(r, func(n int, line string) {
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			return
		}
		st.Lines++
		f := splitTab(line, 5)
		if len(f) < 4 {
			st.skip(n, "%d fields, want 5 (start, end, AS, country, description)", len(f))
			return
		}
		first, err1 := netip.ParseAddr(f[0])
		last, err2 := netip.ParseAddr(f[1])
		if err1 != nil || err2 != nil {
			st.skip(n, "range %q-%q: not two addresses", f[0], f[1])
			return
		}
		pfx := rangePrefixes(first, last)
		if pfx == nil {
			st.skip(n, "range %s-%s: not a range", first, last)
			return
		}
		asn, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			st.skip(n, "AS %q: not a number", f[2])
			return
		}
		if asn == 0 {
			return
		}
		cc, hasCC := countryCode(f[3])
		for _, p := range pfx {
			m.Origins.Insert(p, uint32(asn))
			st.Origins++
			if hasCC {
				m.PrefixCountries.Insert(p, cc)
				st.PrefixCountries++
			}
		}
		if hasCC {
			m.Countries[uint32(asn)] = cc
			st.Countries++
		}
		if len(f) == 5 {
			if name := orgName(latin1(f[4])); name != "" && name != "Not routed" {
				m.Names[uint32(asn)] = name
				st.Names++
			}
		}
	})
	return st, err
}
