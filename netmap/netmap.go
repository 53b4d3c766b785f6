// Package netmap answers the attribution questions every decoder asks: which
// AS originates this address, which country is this AS in, which region is
// this prefix in. Answers come from mapping files and, when BGP is ingested,
// from the live routing table.
package netmap

import (
	"encoding/binary"
	"net/netip"
	"strings"
)

// Table is a longest-prefix-match table from prefixes to values. The zero
// value is an empty table ready to use. It is not safe for concurrent use.
type Table[V any] struct {
	v4 lpm[V]
	v6 lpm[V]
	n  int
}

// addrKey returns a as two words, IPv4 in the top 32 bits of hi, and its
// number of octets.
func addrKey(a netip.Addr) (hi, lo uint64, octets int) {
	if a.Is4() {
		k := a.As4()
		return uint64(k[0])<<56 | uint64(k[1])<<48 | uint64(k[2])<<40 | uint64(k[3])<<32, 0, 4
	}
	k := a.As16()
	return binary.BigEndian.Uint64(k[:8]), binary.BigEndian.Uint64(k[8:]), 16
}

func (t *Table[V]) family(octets int) *lpm[V] {
	if octets == 4 {
		return &t.v4
	}
	return &t.v6
}

// Insert sets the value of prefix p. An invalid prefix is ignored.
func (t *Table[V]) Insert(p netip.Prefix, v V) {
	if !p.IsValid() {
		return
	}
	p = p.Masked()
	hi, lo, n := addrKey(p.Addr())
	if t.family(n).insert(hi, lo, p.Bits(), v) {
		t.n++
	}
}

// Delete removes prefix p and reports whether it was present. The routing
// table needs it: visible routes come and go all day.
func (t *Table[V]) Delete(p netip.Prefix) bool {
	if !p.IsValid() {
		return false
	}
	p = p.Masked()
	hi, lo, n := addrKey(p.Addr())
	if t.family(n).delete(hi, lo, p.Bits()) {
		t.n--
		return true
	}
	return false
}

// Get returns the value stored for exactly prefix p.
func (t *Table[V]) Get(p netip.Prefix) (V, bool) {
	if !p.IsValid() {
		var zero V
		return zero, false
	}
	p = p.Masked()
	hi, lo, n := addrKey(p.Addr())
	return t.family(n).get(hi, lo, p.Bits())
}

// Len returns the number of prefixes in the table.
func (t *Table[V]) Len() int { return t.n }

// Lookup returns the value of the longest prefix containing a. IPv4-mapped
// IPv6 addresses are looked up as IPv4. It does not allocate.
func (t *Table[V]) Lookup(a netip.Addr) (V, bool) {
	if !a.IsValid() {
		var zero V
		return zero, false
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	hi, lo, n := addrKey(a)
	return t.family(n).lookup(hi, lo, n)
}

// Supernets calls fn for each stored prefix that strictly contains p,
// shortest first, until fn returns false.
func (t *Table[V]) Supernets(p netip.Prefix, fn func(netip.Prefix, V) bool) {
	if !p.IsValid() {
		return
	}
	p = p.Masked()
	hi, lo, n := addrKey(p.Addr())
	t.family(n).supernets(hi, lo, p.Bits(), n, fn)
}

// Subnets calls fn for each stored prefix strictly inside p until fn
// returns false. The routing table counts an origin's address space once
// however many of its prefixes overlap, and needs both directions for it.
func (t *Table[V]) Subnets(p netip.Prefix, fn func(netip.Prefix, V) bool) {
	if !p.IsValid() {
		return
	}
	p = p.Masked()
	hi, lo, n := addrKey(p.Addr())
	t.family(n).subnets(hi, lo, p.Bits(), n, fn)
}

// Walk calls fn for each prefix and its value, IPv4 first, in an order that
// depends only on the table's contents (so checkpoints are reproducible); it
// stops when fn returns false.
func (t *Table[V]) Walk(fn func(netip.Prefix, V) bool) {
	if t.v4.walk(4, fn) {
		t.v6.walk(16, fn)
	}
}

// Map holds the attribution data of one deployment.
type Map struct {
	// Countries maps an AS number to its ISO country code.
	Countries map[uint32]string
	// Names maps an AS number to a display name.
	Names map[uint32]string
	// Origins maps a prefix to its origin AS when no routing table says so.
	Origins Table[uint32]
	// Regions maps a prefix to an ISO 3166-2 region code.
	Regions Table[string]
	// PrefixCountries maps a prefix to the country its addresses are
	// registered or located in (RIR statistics, a geolocation database),
	// for addresses whose AS spans several countries.
	PrefixCountries Table[string]
	// Given names the entities an input names and the rest of the map
	// does not ("region:1226", numbered by IODA, is "Gaza Strip" in its
	// API's response): a fallback for display, never for attribution.
	Given map[string]string
	// Live, when set, is consulted before Origins: the BGP routing table.
	Live interface {
		OriginAS(netip.Addr) (uint32, bool)
	}
}

// New returns an empty Map.
func New() *Map {
	return &Map{Countries: map[uint32]string{}, Names: map[uint32]string{}}
}

// Country returns the country code of asn, or "".
func (m *Map) Country(asn uint32) string {
	if m == nil {
		return ""
	}
	return m.Countries[asn]
}

// OriginAS returns the origin AS of a, from the live table first.
func (m *Map) OriginAS(a netip.Addr) (uint32, bool) {
	if m == nil {
		return 0, false
	}
	if m.Live != nil {
		if asn, ok := m.Live.OriginAS(a); ok {
			return asn, true
		}
	}
	return m.Origins.Lookup(a)
}

// CountryOf returns the country of address a from the prefix data, or "".
func (m *Map) CountryOf(a netip.Addr) string {
	if m == nil {
		return ""
	}
	c, _ := m.PrefixCountries.Lookup(a)
	return c
}

// Region returns the region of a, or "".
func (m *Map) Region(a netip.Addr) string {
	if m == nil {
		return ""
	}
	r, _ := m.Regions.Lookup(a)
	return strings.ToUpper(r)
}

// Replace makes m hold n's data, keeping m's live routing table. Decoders
// and the alert manager keep their *Map, so a reloaded mapping file takes
// effect everywhere at once; the caller must make sure nobody reads m
// meanwhile (the service does it on the pipeline's goroutine).
func (m *Map) Replace(n *Map) {
	live := m.Live
	*m = *n
	m.Live = live
}
