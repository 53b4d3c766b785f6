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
type spillArea struct {
	codes []uint8
	free  []uint32
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
// fit one, else into the spill area.
func (r *Ring) storeGroup(g int32, cs *[maxGroupDays]uint8) {
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
		return
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
}

// Spilled returns how many times of day hold their codes in the spill
// area, for the per-series figure and its tests.
func (r *Ring) Spilled() int {
	if r.spill == nil {
		return 0
	}
	return len(r.spill.codes)/int(r.days) - len(r.spill.free)
}
