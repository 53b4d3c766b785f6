// Package netmap answers the attribution questions every decoder asks: which
// AS originates this address, which country is this AS in, which region is
// this prefix in. Answers come from mapping files and, when BGP is ingested,
// from the live routing table.
package netmap

import (
	"net/netip"
	"strings"
)

// Table is a longest-prefix-match table from prefixes to values.
type Table[V any] struct {
	v4 []map[uint32]V // index: prefix length 0..32
	v6 []map[[16]byte]V
	// lens lists the prefix lengths present, longest first, so lookups skip
	// empty lengths.
	lens4, lens6 []int
	n            int
}

// Insert sets the value of prefix p.
func (t *Table[V]) Insert(p netip.Prefix, v V) {
	p = p.Masked()
	bits := p.Bits()
	if p.Addr().Is4() {
		if t.v4 == nil {
			t.v4 = make([]map[uint32]V, 33)
		}
		if t.v4[bits] == nil {
			t.v4[bits] = map[uint32]V{}
			t.lens4 = insertLen(t.lens4, bits)
		}
		k := p.Addr().As4()
		key := uint32(k[0])<<24 | uint32(k[1])<<16 | uint32(k[2])<<8 | uint32(k[3])
		if _, ok := t.v4[bits][key]; !ok {
			t.n++
		}
		t.v4[bits][key] = v
		return
	}
	if t.v6 == nil {
		t.v6 = make([]map[[16]byte]V, 129)
	}
	if t.v6[bits] == nil {
		t.v6[bits] = map[[16]byte]V{}
		t.lens6 = insertLen(t.lens6, bits)
	}
	if _, ok := t.v6[bits][p.Addr().As16()]; !ok {
		t.n++
	}
	t.v6[bits][p.Addr().As16()] = v
}

func insertLen(lens []int, bits int) []int {
	lens = append(lens, bits)
	for i := len(lens) - 1; i > 0 && lens[i] > lens[i-1]; i-- {
		lens[i], lens[i-1] = lens[i-1], lens[i]
	}
	return lens
}

// Len returns the number of prefixes in the table.
func (t *Table[V]) Len() int { return t.n }

// Lookup returns the value of the longest prefix containing a.
func (t *Table[V]) Lookup(a netip.Addr) (V, bool) {
	var zero V
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() {
		k := a.As4()
		key := uint32(k[0])<<24 | uint32(k[1])<<16 | uint32(k[2])<<8 | uint32(k[3])
		for _, bits := range t.lens4 {
			var m uint32
			if bits > 0 {
				m = ^uint32(0) << (32 - bits)
			}
			if v, ok := t.v4[bits][key&m]; ok {
				return v, true
			}
		}
		return zero, false
	}
	for _, bits := range t.lens6 {
		p, _ := a.Prefix(bits)
		if v, ok := t.v6[bits][p.Addr().As16()]; ok {
			return v, true
		}
	}
	return zero, false
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

// Region returns the region of a, or "".
func (m *Map) Region(a netip.Addr) string {
	if m == nil {
		return ""
	}
	r, _ := m.Regions.Lookup(a)
	return strings.ToUpper(r)
}
