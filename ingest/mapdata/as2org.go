package mapdata

import (
	"io"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/netmap"
)

// ReadAS2Org reads CAIDA's AS-to-organisation file (YYYYMMDD.as-org2info.txt),
// which holds two kinds of pipe-separated lines, each announced by a format
// comment:
//
//	# format:aut|changed|aut_name|org_id|opaque_id|source
//	# format:org_id|changed|org_name|country|source
//
// An AS takes its organisation's name and country; an AS whose organisation
// is missing keeps its own aut_name. The file's terms do not allow
// redistribution, so none ships with outagewatch: point `netmap build` at
// your licensed copy.
func ReadAS2Org(r io.Reader, m *netmap.Map) (Stats, error) {
	st := Stats{Format: "as2org"}
	type org struct{ name, country string }
	orgs := map[string]org{}
	type aut struct {
		name, org string
	}
	auts := map[uint32]aut{}
	var fields []string
	idx := func(name string) int {
		for i, f := range fields {
			if f == name {
				return i
			}
		}
		return -1
	}
	err := lines(r, func(n int, line string) {
		if strings.HasPrefix(line, "#") {
			if f, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(line, "#")), "format:"); ok {
				fields = strings.Split(strings.TrimSpace(f), "|")
			}
			return
		}
		if strings.TrimSpace(line) == "" {
			return
		}
		st.Lines++
		if fields == nil {
			st.skip(n, "data before any '# format:' line")
			return
		}
		v := strings.Split(line, "|")
		if len(v) != len(fields) {
			st.skip(n, "%d fields, the format line says %d", len(v), len(fields))
			return
		}
		get := func(name string) string {
			if i := idx(name); i >= 0 {
				return strings.TrimSpace(v[i])
			}
			return ""
		}
		switch {
		case idx("aut") >= 0:
			asn, err := strconv.ParseUint(get("aut"), 10, 32)
			if err != nil {
				st.skip(n, "aut %q: not an AS number", get("aut"))
				return
			}
			auts[uint32(asn)] = aut{name: latin1(get("aut_name")), org: get("org_id")}
		case idx("org_id") >= 0:
			name := get("org_name")
			if name == "" {
				name = get("name")
			}
			orgs[get("org_id")] = org{name: latin1(name), country: get("country")}
		default:
			st.skip(n, "format line names neither aut nor org_id")
		}
	})
	for asn, a := range auts {
		o, ok := orgs[a.org]
		name := a.name
		if ok && o.name != "" {
			name = o.name
		}
		if name != "" {
			m.Names[asn] = name
			st.Names++
		}
		if cc, ok := countryCode(o.country); ok {
			m.Countries[asn] = cc
			st.Countries++
		}
	}
	return st, err
}
