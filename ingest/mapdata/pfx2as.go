package mapdata

import (
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/netmap"
)

// ReadPfx2AS reads a prefix-to-origin table in either of its two common
// tab-separated forms:
//
//	1.0.0.0/24	15169          pyasn's IPASN files (";" starts a comment)
//	1.0.0.0	24	15169          CAIDA's RouteViews pfx2as files
//
// A prefix with several origins ("10_20", most frequent first) takes the
// first; an AS set ("10,20") takes its first member.
func ReadPfx2AS(r io.Reader, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "pfx2as"}
	err := lines(r, func(n int, line string) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == ';' || line[0] == '#' {
			return
		}
		st.Lines++
		f := strings.Fields(line)
		var ps, as string
		switch len(f) {
		case 2:
			ps, as = f[0], f[1]
		case 3:
			ps, as = f[0]+"/"+f[1], f[2]
		default:
			st.skip(n, "want prefix<TAB>origin or address<TAB>length<TAB>origin")
			return
		}
		p, err := netip.ParsePrefix(ps)
		if err != nil {
			st.skip(n, "%v", err)
			return
		}
		as, _, _ = strings.Cut(as, "_")
		as, _, _ = strings.Cut(as, ",")
		asn, err := strconv.ParseUint(strings.Trim(as, "{}"), 10, 32)
		if err != nil || asn == 0 {
			st.skip(n, "origin %q: not an AS number", as)
			return
		}
		m.Origins.Insert(p.Masked(), uint32(asn))
		st.Origins++
	})
	return st, err
}
