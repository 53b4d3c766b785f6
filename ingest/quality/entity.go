package quality

import (
	"net/netip"
	"strconv"

	"github.com/outagewatch/outagewatch/obs"
	qm "github.com/outagewatch/outagewatch/obs/quality"
)

type probeKey struct {
	probe  string
	dstASN uint32
	prefix netip.Prefix
}

// probeEntity names the series of probe towards dst (or, without an
// address, dstASN); "" when the probe name cannot be part of an entity or
// no destination is known.
func (c *entities) probeEntity(probe string, dst netip.Addr, dstASN uint32) string {
	k := probeKey{probe: probe}
	switch {
	case dst.IsValid():
		k.prefix = qm.DestPrefix(dst, -1)
	case dstASN != 0:
		k.dstASN = dstASN
	default:
		return ""
	}
	if e, ok := c.probes[k]; ok {
		return e
	}
	if !qm.ValidName(probe) {
		return ""
	}
	if len(c.probes) >= cacheLimit {
		clear(c.probes)
	}
	e := obs.KindProbe + ":" + probe + ">"
	if k.prefix.IsValid() {
		e += k.prefix.String()
	} else {
		e += "as" + strconv.FormatUint(uint64(dstASN), 10)
	}
	c.probes[k] = e
	return e
}

// Entity caches bound the memory a hostile stream can make a decoder hold;
// when one fills it is emptied, and names are built afresh.
const cacheLimit = 1 << 16

// entities turns the parts of a measurement into entity names, allocating
// only the first time a name is seen. One decoder owns one.
type entities struct {
	asn       obs.ASNCache
	countries map[string]country // code as received → its names
	sites     map[string]*site   // site name → its transits and paths
	strs      map[string]string  // interned probe names
	probes    map[probeKey]string
	last      *site // the site of the measurement being decoded
}

type site struct {
	name    string
	transit map[uint32]string
	paths4  map[uint64]string // transit<<32 | IPv4 /24: the common case, hashed fast
	paths   map[pathKey]string
}

type pathKey struct {
	transit uint32
	dstASN  uint32       // used when prefix is not valid
	prefix  netip.Prefix // destination /24 or /48
}

func newEntities() entities {
	return entities{asn: obs.ASNCache{}, countries: map[string]country{}, sites: map[string]*site{}, strs: map[string]string{},
		probes: map[probeKey]string{}}
}

// intern returns b as a string, shared with earlier equal strings.
func (c *entities) intern(b []byte) string {
	if s, ok := c.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.strs) >= cacheLimit {
		clear(c.strs)
	}
	c.strs[s] = s
	return s
}

// site returns the cache of a site name (already validated).
func (c *entities) site(name []byte) *site {
	if s := c.last; s != nil && s.name == string(name) {
		return s
	}
	s, ok := c.sites[string(name)]
	if !ok {
		s = c.newSite(string(name))
	}
	c.last = s
	return s
}

// siteNamed is site for a name held as a string.
func (c *entities) siteNamed(name string) *site {
	if s := c.last; s != nil && s.name == name {
		return s
	}
	s, ok := c.sites[name]
	if !ok {
		s = c.newSite(name)
	}
	c.last = s
	return s
}

func (c *entities) newSite(name string) *site {
	if len(c.sites) >= cacheLimit {
		clear(c.sites)
	}
	s := &site{name: name, transit: map[uint32]string{}, paths4: map[uint64]string{}, paths: map[pathKey]string{}}
	c.sites[name] = s
	return s
}

// country is a country code as received and its entity name.
type country struct{ code, entity string }

// country returns the names of a country code (already validated).
func (c *entities) country(cc []byte) country {
	if e, ok := c.countries[string(cc)]; ok {
		return e
	}
	if len(c.countries) >= cacheLimit {
		clear(c.countries)
	}
	e := country{string(cc), obs.Country(string(cc))}
	c.countries[e.code] = e
	return e
}

func (s *site) transitEntity(asn uint32) string {
	if e, ok := s.transit[asn]; ok {
		return e
	}
	if len(s.transit) >= cacheLimit {
		clear(s.transit)
	}
	e := obs.Transit(asn, s.name)
	s.transit[asn] = e
	return e
}

// pathEntity names the destination dst (or, without an address, dstASN)
// through transit at this site; "" when neither is known.
func (s *site) pathEntity(transit uint32, dst netip.Addr, dstASN uint32) string {
	if dst.Is4() || dst.Is4In6() {
		a := dst.Unmap().As4()
		k := uint64(transit)<<32 | uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8
		if e, ok := s.paths4[k]; ok {
			return e
		}
		if len(s.paths4) >= cacheLimit {
			clear(s.paths4)
		}
		e := qm.PathPrefix(transit, s.name) + qm.DestPrefix(dst, -1).String()
		s.paths4[k] = e
		return e
	}
	k := pathKey{transit: transit}
	switch {
	case dst.IsValid():
		k.prefix = qm.DestPrefix(dst, -1)
	case dstASN != 0:
		k.dstASN = dstASN
	default:
		return ""
	}
	if e, ok := s.paths[k]; ok {
		return e
	}
	if len(s.paths) >= cacheLimit {
		clear(s.paths)
	}
	var e string
	if k.prefix.IsValid() {
		e = qm.PathPrefix(transit, s.name) + k.prefix.String()
	} else {
		e = qm.PathPrefix(transit, s.name) + "as" + strconv.FormatUint(uint64(dstASN), 10)
	}
	s.paths[k] = e
	return e
}
