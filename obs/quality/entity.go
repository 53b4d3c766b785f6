package quality

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/obs"
)

// KindPath is the entity kind of one destination reached through one transit
// at one site.
const KindPath = "path"

// PathEntity names the packet-loss series of one destination through a
// transit at a site:
//
//	path:<transit ASN>[@<site>]><destination>
//	path:1299@lis01>198.51.100.0/24
//	path:1299@lis01>2001:db8:7::/48
//	path:1299@lis01>as15169
//
// The part before '>' is the transit entity's id, so that a detector groups
// destinations by transit with ParsePathEntity alone. Destinations are
// aggregated so that the number of series stays bounded by the networks
// probed, not the hosts: an address becomes its /24 (IPv4) or /48 (IPv6); a
// longer prefix is widened likewise and a shorter one kept; an AS number
// written "as15169" or "AS15169" becomes "as15169"; anything else (a host
// name, say) is used as given. dest must not be empty.
func PathEntity(transitASN uint32, site, dest string) string {
	return PathPrefix(transitASN, site) + normalizeDest(dest)
}

// PathPrefix is the part of a path entity before its destination,
// "path:1299@lis01>": a decoder that caches destinations per transit
// appends the destination (see DestPrefix) to it instead of building the
// whole name again.
func PathPrefix(transitASN uint32, site string) string {
	s := "path:" + strconv.FormatUint(uint64(transitASN), 10)
	if site != "" {
		s += "@" + site
	}
	return s + ">"
}

func normalizeDest(dest string) string {
	if p, err := netip.ParsePrefix(dest); err == nil {
		return DestPrefix(p.Addr(), p.Bits()).String()
	}
	if a, err := netip.ParseAddr(dest); err == nil {
		return DestPrefix(a.WithZone(""), -1).String()
	}
	if len(dest) > 2 && (dest[:2] == "as" || dest[:2] == "AS") {
		if n, err := strconv.ParseUint(dest[2:], 10, 32); err == nil {
			return "as" + strconv.FormatUint(n, 10)
		}
	}
	return dest
}

// DestPrefix aggregates an address (bits < 0) or a prefix to the /24 or /48
// a path or probe series stands for.
func DestPrefix(a netip.Addr, bits int) netip.Prefix {
	a = a.Unmap()
	limit := 48
	if a.Is4() {
		limit = 24
	}
	if bits < 0 || bits > limit {
		bits = limit
	}
	p, _ := a.Prefix(bits)
	return p
}

// ParsePathEntity splits a path entity into the entity of its transit
// ("transit:1299@lis01", as obs.Transit names it) and its destination
// ("198.51.100.0/24"). ok is false for anything that is not a path entity.
func ParsePathEntity(e string) (transitEntity, dest string, ok bool) {
	rest, found := strings.CutPrefix(e, KindPath+":")
	if !found {
		return "", "", false
	}
	i := strings.IndexByte(rest, '>')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	tr, dest := rest[:i], rest[i+1:]
	asn, site, _ := strings.Cut(tr, "@")
	n, err := strconv.ParseUint(asn, 10, 32)
	if err != nil || !ValidName(site) {
		return "", "", false
	}
	return obs.Transit(uint32(n), site), dest, true
}

// ValidName says whether s may name a site or a probe inside entity names:
// it must not contain the separators of transit and path entities.
func ValidName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ProbeEntity names the series of one probe towards one destination:
//
//	probe:<probe>><destination>
//	probe:6001>193.0.14.0/24
//	probe:lis-fibre-3>as15169
//
// The destination is aggregated as for path entities. A probe name must be
// letters, digits, '-', '_' and '.'; ok is false otherwise, or when dest
// is empty.
func ProbeEntity(probe, dest string) (string, bool) {
	if probe == "" || dest == "" || !ValidName(probe) {
		return "", false
	}
	return obs.KindProbe + ":" + probe + ">" + normalizeDest(dest), true
}
