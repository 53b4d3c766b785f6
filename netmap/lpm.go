package netmap

import (
	"math/bits"
	"net/netip"
)

// The longest-prefix-match structure behind Table is a multibit trie with a
// stride of one octet, in the style of the Allotment Routing Table (Knuth,
// later popularised by Tailscale's and gaissmai's Go implementations): each
// node stores the prefixes of lengths 8d+1 … 8d+8 (d is its depth) in a
// 512-bit "heap index" bitset and keeps child nodes and values in popcount-
// compressed slices. That keeps a full BGP table (1M prefixes) in tens of
// megabytes instead of the hundreds a dense DIR-24-8 array or per-length hash
// maps need, while a lookup touches at most one node per octet and allocates
// nothing: the pipeline resolves an address for every flow record.

// bitset512 holds one bit per heap index 1..511 of an octet-stride node.
type bitset512 [8]uint64

func (b *bitset512) test(i uint) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b *bitset512) set(i uint)       { b[i>>6] |= 1 << (i & 63) }
func (b *bitset512) clear(i uint)     { b[i>>6] &^= 1 << (i & 63) }

// rank returns the number of set bits below i.
func (b *bitset512) rank(i uint) int {
	n := 0
	w := i >> 6
	for j := uint(0); j < w; j++ {
		n += bits.OnesCount64(b[j])
	}
	return n + bits.OnesCount64(b[w]&(1<<(i&63)-1))
}

func (b *bitset512) empty() bool {
	return b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] == 0
}

// highestAnd returns the highest bit set in both b and m.
func (b *bitset512) highestAnd(m *bitset512) (uint, bool) {
	for w := 7; w >= 0; w-- {
		if x := b[w] & m[w]; x != 0 {
			return uint(w)<<6 + uint(63-bits.LeadingZeros64(x)), true
		}
	}
	return 0, false
}

// bitset256 holds one bit per child octet.
type bitset256 [4]uint64

func (b *bitset256) test(i uint) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b *bitset256) set(i uint)       { b[i>>6] |= 1 << (i & 63) }
func (b *bitset256) clear(i uint)     { b[i>>6] &^= 1 << (i & 63) }
func (b *bitset256) rank(i uint) int {
	n := 0
	w := i >> 6
	for j := uint(0); j < w; j++ {
		n += bits.OnesCount64(b[j])
	}
	return n + bits.OnesCount64(b[w]&(1<<(i&63)-1))
}
func (b *bitset256) empty() bool { return b[0]|b[1]|b[2]|b[3] == 0 }

// ancestors[o] has the heap indices of every in-node prefix that covers octet
// o: 256+o, (256+o)>>1, … , 1. A node's best match for an octet is then the
// highest bit of prefixes&ancestors[o].
var ancestors [256]bitset512

func init() {
	for o := 0; o < 256; o++ {
		for i := uint(256 + o); i >= 1; i >>= 1 {
			ancestors[o].set(i)
		}
	}
}

// heapIndex returns the in-node index of a prefix of length l (0..8) whose
// first l bits (of the node's octet) are those of octet.
func heapIndex(octet byte, l int) uint {
	return 1<<uint(l) + uint(octet)>>(8-uint(l))
}

// lpmLeaf is a prefix stored in a child slot of a node because it is the only
// prefix below that slot. Leaves are path compression: a lone /48 in its /32
// costs one comparison instead of a chain of four nodes, each a cache miss.
type lpmLeaf[V any] struct {
	hi, lo uint64 // the masked address, IPv4 in the top 32 bits of hi
	bits   int
	v      V
}

func (l *lpmLeaf[V]) contains(hi, lo uint64) bool {
	switch {
	case l.bits == 0:
		return true
	case l.bits <= 64:
		return (hi^l.hi)>>(64-uint(l.bits)) == 0
	default:
		return hi == l.hi && (lo^l.lo)>>(128-uint(l.bits)) == 0
	}
}

// lpmNode is laid out as four cache lines (its 256-byte size class is
// 64-byte aligned): descending reads only the first, a leaf test the second,
// a prefix match the last two.
type lpmNode[V any] struct {
	kids     bitset256 // slots with a child node
	children []*lpmNode[V]
	_        [8]byte
	leafs    bitset256 // slots with a leaf; never also in kids
	leaves   []lpmLeaf[V]
	_        [8]byte
	prefixes bitset512
	values   []V
	_        [40]byte
}

func (n *lpmNode[V]) isEmpty() bool {
	return n.prefixes.empty() && n.kids.empty() && n.leafs.empty()
}

func (n *lpmNode[V]) child(o byte) *lpmNode[V] {
	if !n.kids.test(uint(o)) {
		return nil
	}
	return n.children[n.kids.rank(uint(o))]
}

func (n *lpmNode[V]) addChild(o byte) *lpmNode[V] {
	c := &lpmNode[V]{}
	r := n.kids.rank(uint(o))
	n.kids.set(uint(o))
	n.children = append(n.children, nil)
	copy(n.children[r+1:], n.children[r:])
	n.children[r] = c
	return c
}

func (n *lpmNode[V]) removeChild(o byte) {
	r := n.kids.rank(uint(o))
	n.kids.clear(uint(o))
	copy(n.children[r:], n.children[r+1:])
	n.children[len(n.children)-1] = nil
	n.children = n.children[:len(n.children)-1]
}

func (n *lpmNode[V]) leaf(o byte) *lpmLeaf[V] {
	if !n.leafs.test(uint(o)) {
		return nil
	}
	return &n.leaves[n.leafs.rank(uint(o))]
}

func (n *lpmNode[V]) addLeaf(o byte, l lpmLeaf[V]) {
	r := n.leafs.rank(uint(o))
	n.leafs.set(uint(o))
	n.leaves = append(n.leaves, lpmLeaf[V]{})
	copy(n.leaves[r+1:], n.leaves[r:])
	n.leaves[r] = l
}

func (n *lpmNode[V]) removeLeaf(o byte) {
	r := n.leafs.rank(uint(o))
	n.leafs.clear(uint(o))
	copy(n.leaves[r:], n.leaves[r+1:])
	n.leaves[len(n.leaves)-1] = lpmLeaf[V]{}
	n.leaves = n.leaves[:len(n.leaves)-1]
}

// setPrefix stores v at heap index i and reports whether i was new.
func (n *lpmNode[V]) setPrefix(i uint, v V) bool {
	r := n.prefixes.rank(i)
	if n.prefixes.test(i) {
		n.values[r] = v
		return false
	}
	n.prefixes.set(i)
	var zero V
	n.values = append(n.values, zero)
	copy(n.values[r+1:], n.values[r:])
	n.values[r] = v
	return true
}

func (n *lpmNode[V]) getPrefix(i uint) (V, bool) {
	if !n.prefixes.test(i) {
		var zero V
		return zero, false
	}
	return n.values[n.prefixes.rank(i)], true
}

func (n *lpmNode[V]) deletePrefix(i uint) bool {
	if !n.prefixes.test(i) {
		return false
	}
	r := n.prefixes.rank(i)
	n.prefixes.clear(i)
	copy(n.values[r:], n.values[r+1:])
	var zero V
	n.values[len(n.values)-1] = zero
	n.values = n.values[:len(n.values)-1]
	return true
}

// octet returns octet d (0..15) of the address hi:lo.
func octet(hi, lo uint64, d int) byte {
	if d < 8 {
		return byte(hi >> (56 - 8*uint(d)))
	}
	return byte(lo >> (56 - 8*uint(d-8)))
}

func setOctet(hi, lo uint64, d int, b byte) (uint64, uint64) {
	if d < 8 {
		s := 56 - 8*uint(d)
		return hi&^(0xff<<s) | uint64(b)<<s, lo
	}
	s := 56 - 8*uint(d-8)
	return hi, lo&^(0xff<<s) | uint64(b)<<s
}

// lpm is one address family's table. Prefixes of /16 and shorter live in a
// small trie (short) whose root holds /0../8; longer ones live in subtries
// hung from a dense array indexed by the first 16 bits, each rooted at depth
// 2 (lengths 17..24). The dense array saves the two node visits that would
// otherwise start every lookup of a /24 or /48, which is most of them: on a
// 1M-prefix table those visits are cache misses.
type lpm[V any] struct {
	short lpmNode[V]
	top   []*lpmNode[V] // 65536 entries once a prefix longer than /16 exists
}

const topDepth = 2 // the depth of the nodes hung from lpm.top

// position returns the depth of the node that holds a prefix of length bits
// and the prefix's length within that node (1..8, or 0 for /0 at the root).
func position(bits int) (depth, l int) {
	if bits == 0 {
		return 0, 0
	}
	return (bits - 1) / 8, bits - (bits-1)/8*8
}

// start returns the node where a prefix of the given length is rooted and
// that node's depth; create says whether to make a missing top-level node.
func (t *lpm[V]) start(hi uint64, bits int, create bool) (*lpmNode[V], int) {
	if bits <= 16 {
		return &t.short, 0
	}
	if t.top == nil {
		if !create {
			return nil, 0
		}
		t.top = make([]*lpmNode[V], 1<<16)
	}
	n := t.top[hi>>48]
	if n == nil && create {
		n = &lpmNode[V]{}
		t.top[hi>>48] = n
	}
	return n, topDepth
}

func (t *lpm[V]) insert(hi, lo uint64, bits int, v V) bool {
	n, d := t.start(hi, bits, true)
	return insertFrom(n, d, lpmLeaf[V]{hi: hi, lo: lo, bits: bits, v: v})
}

// insertFrom inserts p below n, a node at depth d.
func insertFrom[V any](n *lpmNode[V], d int, p lpmLeaf[V]) bool {
	depth, l := position(p.bits)
	for ; d < depth; d++ {
		o := octet(p.hi, p.lo, d)
		if c := n.child(o); c != nil {
			n = c
			continue
		}
		lf := n.leaf(o)
		if lf == nil {
			n.addLeaf(o, p)
			return true
		}
		if lf.hi == p.hi && lf.lo == p.lo && lf.bits == p.bits {
			lf.v = p.v
			return false
		}
		// Two prefixes now share the slot: the leaf becomes a node.
		old := *lf
		n.removeLeaf(o)
		n = n.addChild(o)
		insertFrom(n, d+1, old)
	}
	return n.setPrefix(heapIndex(octet(p.hi, p.lo, depth), l), p.v)
}

func (t *lpm[V]) get(hi, lo uint64, bits int) (V, bool) {
	var zero V
	n, d := t.start(hi, bits, false)
	if n == nil {
		return zero, false
	}
	depth, l := position(bits)
	for ; d < depth; d++ {
		o := octet(hi, lo, d)
		if c := n.child(o); c != nil {
			n = c
			continue
		}
		if lf := n.leaf(o); lf != nil && lf.hi == hi && lf.lo == lo && lf.bits == bits {
			return lf.v, true
		}
		return zero, false
	}
	return n.getPrefix(heapIndex(octet(hi, lo, depth), l))
}

func (t *lpm[V]) delete(hi, lo uint64, bits int) bool {
	n, d0 := t.start(hi, bits, false)
	if n == nil {
		return false
	}
	depth, l := position(bits)
	var path [16]*lpmNode[V]
	d := d0
	for ; d < depth; d++ {
		o := octet(hi, lo, d)
		if c := n.child(o); c != nil {
			path[d] = n
			n = c
			continue
		}
		if lf := n.leaf(o); lf != nil && lf.hi == hi && lf.lo == lo && lf.bits == bits {
			n.removeLeaf(o)
			break
		}
		return false
	}
	if d == depth && !n.deletePrefix(heapIndex(octet(hi, lo, depth), l)) {
		return false
	}
	// Prune emptied nodes so that a table that churns (routes withdrawn and
	// re-announced all day) does not keep every node it ever needed.
	for d--; d >= d0 && n.isEmpty(); d-- {
		path[d].removeChild(octet(hi, lo, d))
		n = path[d]
	}
	if d0 == topDepth && n == t.top[hi>>48] && n.isEmpty() {
		t.top[hi>>48] = nil
	}
	return true
}

// lookup finds the longest match of hi:lo (an address of the given number
// of octets): first in the subtrie for its first 16 bits, then among the
// short prefixes.
func (t *lpm[V]) lookup(hi, lo uint64, octets int) (V, bool) {
	if t.top != nil {
		if n := t.top[hi>>48]; n != nil {
			if v, ok := descend(n, topDepth, hi, lo, octets); ok {
				return v, true
			}
		}
	}
	return descend(&t.short, 0, hi, lo, octets)
}

// descend walks down from n (at depth d0) as far as children exist, stopping
// early at a leaf that covers the address, then back up to the deepest node
// with a covering prefix.
func descend[V any](n *lpmNode[V], d0 int, hi, lo uint64, octets int) (V, bool) {
	var stack [16]*lpmNode[V]
	d := d0
	for {
		stack[d] = n
		if d+1 >= octets {
			break
		}
		o := uint(octet(hi, lo, d))
		if n.kids.test(o) {
			n = n.children[n.kids.rank(o)]
			d++
			continue
		}
		if n.leafs.test(o) {
			if lf := &n.leaves[n.leafs.rank(o)]; lf.contains(hi, lo) {
				return lf.v, true
			}
		}
		break
	}
	for ; d >= d0; d-- {
		n = stack[d]
		if i, ok := n.prefixes.highestAnd(&ancestors[octet(hi, lo, d)]); ok {
			return n.values[n.prefixes.rank(i)], true
		}
	}
	var zero V
	return zero, false
}

// walk calls fn for every prefix of the family (4 or 16 octets).
func (t *lpm[V]) walk(octets int, fn func(netip.Prefix, V) bool) bool {
	if !walkNode(&t.short, 0, 0, 0, octets, fn) {
		return false
	}
	for i, n := range t.top {
		if n != nil && !walkNode(n, topDepth, uint64(i)<<48, 0, octets, fn) {
			return false
		}
	}
	return true
}

func toPrefix(hi, lo uint64, bits, octets int) netip.Prefix {
	var a netip.Addr
	if octets == 4 {
		a = netip.AddrFrom4([4]byte{byte(hi >> 56), byte(hi >> 48), byte(hi >> 40), byte(hi >> 32)})
	} else {
		var b [16]byte
		for i := 0; i < 8; i++ {
			b[i] = byte(hi >> (56 - 8*i))
			b[8+i] = byte(lo >> (56 - 8*i))
		}
		a = netip.AddrFrom16(b)
	}
	return netip.PrefixFrom(a, bits)
}

func walkNode[V any](n *lpmNode[V], depth int, hi, lo uint64, octets int, fn func(netip.Prefix, V) bool) bool {
	for i := uint(1); i < 512; i++ {
		if !n.prefixes.test(i) {
			continue
		}
		l := bits.Len(i) - 1
		b := byte(i - 1<<uint(l))
		if l > 0 {
			b <<= 8 - uint(l)
		}
		h, w := setOctet(hi, lo, depth, b)
		if !fn(toPrefix(h, w, depth*8+l, octets), n.values[n.prefixes.rank(i)]) {
			return false
		}
	}
	for o := 0; o < 256; o++ {
		if lf := n.leaf(byte(o)); lf != nil {
			if !fn(toPrefix(lf.hi, lf.lo, lf.bits, octets), lf.v) {
				return false
			}
			continue
		}
		if c := n.child(byte(o)); c != nil {
			h, w := setOctet(hi, lo, depth, byte(o))
			if !walkNode(c, depth+1, h, w, octets, fn) {
				return false
			}
		}
	}
	return true
}

// nodes counts the trie's nodes, for memory accounting in tests.
func (t *lpm[V]) nodes() int {
	c := countNodes(&t.short)
	for _, n := range t.top {
		if n != nil {
			c += countNodes(n)
		}
	}
	return c
}

func countNodes[V any](n *lpmNode[V]) int {
	c := 1
	for _, k := range n.children {
		c += countNodes(k)
	}
	return c
}

// maskHL keeps the first bits of hi:lo.
func maskHL(hi, lo uint64, bits int) (uint64, uint64) {
	switch {
	case bits <= 0:
		return 0, 0
	case bits < 64:
		return hi &^ (^uint64(0) >> uint(bits)), 0
	case bits == 64:
		return hi, 0
	case bits < 128:
		return hi, lo &^ (^uint64(0) >> uint(bits-64))
	}
	return hi, lo
}

// nodePrefix is the prefix at heap index i of a node at depth whose path
// is hi:lo.
func nodePrefix(i uint, depth int, hi, lo uint64, octets int) netip.Prefix {
	l := bits.Len(i) - 1
	b := byte(i - 1<<uint(l))
	if l > 0 {
		b <<= 8 - uint(l)
	}
	h, w := setOctet(hi, lo, depth, b)
	return toPrefix(h, w, depth*8+l, octets)
}

// supernets calls fn for every stored prefix shorter than bits that
// contains hi:lo, shortest first.
func (t *lpm[V]) supernets(hi, lo uint64, bits, octets int, fn func(netip.Prefix, V) bool) {
	if !supernetsFrom(&t.short, 0, hi, lo, bits, octets, fn) || bits <= 16 || t.top == nil {
		return
	}
	if n := t.top[hi>>48]; n != nil {
		supernetsFrom(n, topDepth, hi, lo, bits, octets, fn)
	}
}

func supernetsFrom[V any](n *lpmNode[V], d int, hi, lo uint64, bits, octets int, fn func(netip.Prefix, V) bool) bool {
	depthP, _ := position(bits)
	for ; ; d++ {
		o := octet(hi, lo, d)
		for l := 0; l <= 8 && d*8+l < bits; l++ {
			if l == 0 && d > 0 {
				continue // lengths 8d live in the parent as l = 8
			}
			if i := heapIndex(o, l); n.prefixes.test(i) {
				h, w := maskHL(hi, lo, d*8+l)
				if !fn(toPrefix(h, w, d*8+l, octets), n.values[n.prefixes.rank(i)]) {
					return false
				}
			}
		}
		if d >= depthP || d+1 >= octets {
			return true
		}
		if c := n.child(o); c != nil {
			n = c
			continue
		}
		if lf := n.leaf(o); lf != nil && lf.bits < bits && lf.contains(hi, lo) {
			return fn(toPrefix(lf.hi, lf.lo, lf.bits, octets), lf.v)
		}
		return true
	}
}

// subnets calls fn for every stored prefix longer than bits inside hi:lo/bits.
func (t *lpm[V]) subnets(hi, lo uint64, bits, octets int, fn func(netip.Prefix, V) bool) {
	hi, lo = maskHL(hi, lo, bits)
	if bits <= 16 {
		if !subnetsFrom(&t.short, 0, hi, lo, bits, octets, fn) || t.top == nil {
			return
		}
		first := int(hi >> 48)
		for j := first; j < first+1<<(16-bits); j++ {
			if n := t.top[j]; n != nil && !walkNode(n, topDepth, uint64(j)<<48, 0, octets, fn) {
				return
			}
		}
		return
	}
	if t.top != nil {
		if n := t.top[hi>>48]; n != nil {
			subnetsFrom(n, topDepth, hi, lo, bits, octets, fn)
		}
	}
}

func subnetsFrom[V any](n *lpmNode[V], d int, hi, lo uint64, bits, octets int, fn func(netip.Prefix, V) bool) bool {
	depthP, lP := position(bits)
	for ; d < depthP; d++ {
		o := octet(hi, lo, d)
		if c := n.child(o); c != nil {
			n = c
			continue
		}
		if lf := n.leaf(o); lf != nil && lf.bits > bits {
			if h, _ := maskHL(lf.hi, lf.lo, bits); h == hi {
				if _, w := maskHL(lf.hi, lf.lo, bits); w == lo {
					return fn(toPrefix(lf.hi, lf.lo, lf.bits, octets), lf.v)
				}
			}
		}
		return true
	}
	ph, pl := maskHL(hi, lo, depthP*8)
	o := octet(hi, lo, depthP)
	i := heapIndex(o, lP)
	for k := 1; lP+k <= 8; k++ {
		for j := i << uint(k); j < (i+1)<<uint(k); j++ {
			if n.prefixes.test(j) && !fn(nodePrefix(j, depthP, ph, pl, octets), n.values[n.prefixes.rank(j)]) {
				return false
			}
		}
	}
	if depthP+1 >= octets {
		return true
	}
	b := int(o) >> (8 - uint(lP)) << (8 - uint(lP))
	for s := b; s < b+1<<(8-uint(lP)); s++ {
		if lf := n.leaf(byte(s)); lf != nil {
			if !fn(toPrefix(lf.hi, lf.lo, lf.bits, octets), lf.v) {
				return false
			}
			continue
		}
		if c := n.child(byte(s)); c != nil {
			h, w := setOctet(ph, pl, depthP, byte(s))
			if !walkNode(c, depthP+1, h, w, octets, fn) {
				return false
			}
		}
	}
	return true
}
