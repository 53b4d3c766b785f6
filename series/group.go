package series

import "encoding/binary"

// The grouped layout. A detector compares a bucket with the same time of
// day on earlier days, and on ordinary days those values sit close to one
// another: of the default format's 128 codes, the days of one time of day
// mostly span fewer than 14 (a factor of 1.7). So a ring of whole days
// keeps each time of day as one 64-bit word, the lowest value code of the
// group (f.bits) and four bits per day:
//
//	0 missing, 1 zero, k ≥ 2 the code lowest + k − 2
//
// Two weeks of the default format take 288 × 8 = 2,304 bytes instead of
// 3,530. A group whose values spread wider (an outage day, a holiday, a
// rebase that clamped nothing) spills: its word holds the index of a slot
// in the ring's spill area, where its codes sit one byte each, until the
// day that widened it leaves the ring and the group fits a word again.
// Every code reads back exactly as stored: the layout changes memory,
// never a value a detector sees.

const (
	maxGroupDays = 14
	offBits      = 4
	offMask      = 1<<offBits - 1
	maxSpread    = offMask - codeMin // widest lowest-to-highest a word holds
	spillFlag    = uint64(1) << 63
)

// groups reports whether a ring of f with this many days per time of day
// keeps its codes grouped: the days fit a word beside the lowest code, and
// the word is smaller than the packed codes it replaces. Only formats of
// a byte or less group (a spilled code takes a byte): the finer ones
// resolve the day-to-day noise into far more than 14 codes, so their
// groups would mostly spill.
func groups(f *Format, days int32) bool {
	return f.bits <= 8 && days >= 2 && days <= maxGroupDays && int(days)*int(f.bits) > 64 && int(f.bits)+offBits*int(days) <= 63
}

// spillArea holds the codes of the groups that do not fit a word, days
// bytes per slot; free lists the slots given back.
//
// A ring whose days spread too widely for grouping to pay (more than
// maxSpills groups spilled: an outage of more than seven hours, or noise
// of ±15 % from day to day) packs its codes day-major like any other ring
// instead: the first splitAt codes in its own storage, the rest in ext,
// so that it costs what the packed layout costs (3,530 bytes and this
// area's 150) and never more. wide marks the times of day whose codes
// would not fit a word, nWide counts them; once no more than half of
// maxSpills are left (the outage has left the ring), it groups again.
type spillArea struct {
	codes   []uint8
	free    []uint32
	ext     []byte
	splitAt uint32
	nWide   int32
	wide    []uint64
}

// maxSpills is how many groups may spill before a packed layout would be
// smaller.
func (r *Ring) maxSpills() int {
	return (r.f.StorageBytes(int(r.n)) - len(r.codes)) / int(r.days)
}

func (r *Ring) word(g int32) uint64 { return binary.LittleEndian.Uint64(r.codes[8*g:]) }

func (r *Ring) setWord(g int32, w uint64) { binary.LittleEndian.PutUint64(r.codes[8*g:], w) }

// groupCode returns the code of time of day g on day d of the ring.
func (r *Ring) groupCode(g, d int32) uint32 {
	w := r.word(g)
	if w&spillFlag != 0 {
		return uint32(r.spill.codes[int32(uint32(w))*r.days+d])
	}
	off := uint32(w>>(uint32(r.f.bits)+offBits*uint32(d))) & offMask
	if off < codeMin {
		return off
	}
	return uint32(w)&r.f.max + off - codeMin
}

// loadGroup reads the codes of time of day g into cs.
func (r *Ring) loadGroup(g int32, cs *[maxGroupDays]uint8) {
	w := r.word(g)
	if w&spillFlag != 0 {
		copy(cs[:r.days], r.spill.codes[int32(uint32(w))*r.days:])
		return
	}
	lo := uint8(uint32(w) & r.f.max)
	w >>= r.f.bits
	for d := range r.days {
		off := uint8(w & offMask)
		if off >= codeMin {
			off += lo - codeMin
		}
		cs[d] = off
		w >>= offBits
	}
}

// storeGroup writes the codes cs of time of day g: as a word when they
// fit one, else into the spill area. It returns false, storing nothing,
// when spilling one more group would cost more than packing the ring.
func (r *Ring) storeGroup(g int32, cs *[maxGroupDays]uint8) bool {
	lo, hi := uint8(0xff), uint8(0)
	for _, c := range cs[:r.days] {
		if c >= codeMin {
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	old := r.word(g)
	if hi < codeMin || hi-lo <= maxSpread {
		if old&spillFlag != 0 {
			r.spill.free = append(r.spill.free, uint32(old))
		}
		var w uint64
		if hi >= codeMin {
			w = uint64(lo)
		}
		for d := r.days - 1; d >= 0; d-- {
			off := cs[d]
			if off >= codeMin {
				off += codeMin - lo
			}
			w |= uint64(off) << (uint32(r.f.bits) + offBits*uint32(d))
		}
		r.setWord(g, w)
		return true
	}
	if old&spillFlag == 0 && r.Spilled() >= r.maxSpills() {
		return false
	}
	var slot uint32
	switch {
	case old&spillFlag != 0:
		slot = uint32(old)
	case r.spill != nil && len(r.spill.free) > 0:
		slot = r.spill.free[len(r.spill.free)-1]
		r.spill.free = r.spill.free[:len(r.spill.free)-1]
	default:
		if r.spill == nil {
			r.spill = &spillArea{}
		}
		slot = uint32(len(r.spill.codes)) / uint32(r.days)
		r.spill.codes = append(r.spill.codes, make([]uint8, r.days)...)
	}
	copy(r.spill.codes[int32(slot)*r.days:], cs[:r.days])
	r.setWord(g, spillFlag|uint64(slot))
	return true
}

// unGroup turns a grouped ring into a packed one, codes unchanged.
func (r *Ring) unGroup() {
	codes := make([]uint8, r.n)
	for i := range r.n {
		codes[i] = uint8(r.get(i))
	}
	r.split()
	for i, c := range codes {
		r.setP(r.pos(int32(i)), uint32(c))
	}
	r.countWide()
}

// regroup turns a packed ring of the grouped size back into a grouped
// one, codes unchanged.
func (r *Ring) regroup() {
	codes := make([]uint8, r.n)
	for i := range r.n {
		codes[i] = uint8(r.get(i))
	}
	clear(r.codes)
	r.spill, r.grouped = nil, true
	var cs [maxGroupDays]uint8
	for g := range r.perDay {
		for d := range r.days {
			cs[d] = codes[d*r.perDay+g]
		}
		if !r.storeGroup(g, &cs) {
			panic("series: regrouped ring spills more than it may") // nWide said otherwise
		}
	}
}

// wideAt reports whether the days of time of day g spread wider than a
// word holds, in a packed ring.
func (r *Ring) wideAt(g int32) bool {
	lo, hi := uint32(0xff), uint32(0)
	for d := range r.days {
		if c := r.getP(uint32(g*r.days + d)); c >= codeMin {
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	return hi >= codeMin && hi-lo > maxSpread
}

// countWide marks every wide time of day of a packed ring.
func (r *Ring) countWide() {
	sp := r.spill
	sp.wide, sp.nWide = make([]uint64, (r.perDay+63)/64), 0
	for g := range r.perDay {
		if r.wideAt(g) {
			sp.wide[g/64] |= 1 << (g % 64)
			sp.nWide++
		}
	}
}

// recheck updates the mark of time of day g after a write to a packed
// ring that gave up grouping, and groups the ring again once few enough
// times of day are wide.
func (r *Ring) recheck(g int32) {
	sp := r.spill
	was := sp.wide[g/64]&(1<<(g%64)) != 0
	switch now := r.wideAt(g); {
	case now && !was:
		sp.wide[g/64] |= 1 << (g % 64)
		sp.nWide++
	case !now && was:
		sp.wide[g/64] &^= 1 << (g % 64)
		sp.nWide--
		if int(sp.nWide) <= r.maxSpills()/2 {
			r.regroup()
		}
	}
}

// split lays a ring of the grouped size out packed, empty: the codes that
// fit its storage there (less the two bytes a three-byte read needs), the
// rest in the spill area's ext.
func (r *Ring) split() {
	clear(r.codes)
	at := uint32((len(r.codes)*8 - 16) / int(r.f.bits))
	r.spill = &spillArea{splitAt: at, ext: make([]byte, r.f.StorageBytes(int(r.n)-int(at)))}
	r.grouped = false
}

// groupsFit reports whether the packed codes of a checkpoint, grouped,
// spill no more groups than pay.
func (r *Ring) groupsFit(packed []byte) bool {
	wide := 0
	for g := range r.perDay {
		lo, hi := uint32(0xff), uint32(0)
		for d := range r.days {
			if c := r.f.getAt(packed, uint32(d*r.perDay+g)); c >= codeMin {
				lo, hi = min(lo, c), max(hi, c)
			}
		}
		if hi >= codeMin && hi-lo > maxSpread {
			wide++
		}
	}
	return wide <= r.maxSpills()
}

// Spilled returns how many times of day hold their codes in the spill
// area, for the per-series figure and its tests; -1 when the ring gave up
// grouping.
func (r *Ring) Spilled() int {
	if r.spill == nil {
		return 0
	}
	if r.spill.ext != nil {
		return -1
	}
	return len(r.spill.codes)/int(r.days) - len(r.spill.free)
}

// setGroupCode writes code c of time of day g on day d in place, when it
// can without changing the group's lowest code: the word is not spilled,
// the day it replaces was not the lowest (so another day keeps the lowest,
// if any day has a value), and c is missing, zero, or within maxSpread
// above the lowest. That is nearly every write of a ring that rotates a
// day at a time (the day replaced is the lowest of fourteen about one time
// in fourteen), and it leaves exactly the word storeGroup would write, for
// a shift and a mask instead of decoding and encoding fourteen days; it
// reports false, writing nothing, otherwise.
func (r *Ring) setGroupCode(g, d int32, c uint8) bool {
	w := r.word(g)
	if w&spillFlag != 0 {
		return false
	}
	shift := uint32(r.f.bits) + offBits*uint32(d)
	if uint8(w>>shift)&offMask == codeMin {
		return false
	}
	off := c
	if c >= codeMin {
		// A word whose days hold no value has lowest 0, as value codes
		// start at codeMin: c would become the lowest.
		lo := uint8(uint32(w) & r.f.max)
		if lo == 0 || c < lo || c-lo > maxSpread {
			return false
		}
		off = c - lo + codeMin
	}
	r.setWord(g, w&^(uint64(offMask)<<shift)|uint64(off)<<shift)
	return true
}
