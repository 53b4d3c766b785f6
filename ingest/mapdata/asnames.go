package mapdata

import (
	"io"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/netmap"
)

// ReadASNames reads an AS-name list in potaroo's asn.txt form, one AS a
// line: "ASN<TAB>HANDLE - Organisation,CC", e.g.
//
//	1	LVLT-1 - Level 3 Communications, Inc.,US
//
// The organisation becomes the AS's name and CC its country. Names in
// ISO-8859-1 (the original file has some) are converted to UTF-8.
func ReadASNames(r io.Reader, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "asnames"}
	err := lines(r, func(n int, line string) {
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			return
		}
		st.Lines++
		f := splitTab(line, 2)
		if len(f) != 2 {
			// Some copies separate the number with spaces.
			f = strings.SplitN(strings.TrimSpace(line), " ", 2)
		}
		if len(f) != 2 {
			st.skip(n, "want ASN<TAB>name")
			return
		}
		asn, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(f[0]), "AS"), 10, 32)
		if err != nil {
			st.skip(n, "AS number %q: not a number", f[0])
			return
		}
		desc := latin1(strings.TrimSpace(f[1]))
		if i := strings.LastIndexByte(desc, ','); i >= 0 && len(desc)-i == 3 {
			if cc, ok := countryCode(desc[i+1:]); ok {
				m.Countries[uint32(asn)] = cc
				st.Countries++
			}
			desc = desc[:i]
		}
		if name := orgName(desc); name != "" {
			m.Names[uint32(asn)] = name
			st.Names++
		}
	})
	return st, err
}
