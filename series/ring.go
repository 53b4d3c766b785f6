// Package series keeps the recent history of one signal for one entity in a
// compact ring of log-quantised codes, so that a tracked series, with its
// bookkeeping, stays under 4 KiB while a detector can still compare each
// bucket with the same bucket on earlier days.
//
// Values are stored log-quantised against a per-series base: code c ≥ 2
// stands for Step^(c-2+base), so every stored value is within half a step
// of the true one. How fine the step is, is the signal's choice (Format):
// the default, seven bits a bucket with a step of 4 % (±2 %), puts two
// weeks of 5-minute buckets (4,032) in 3.5 KB packed, 2.3 KB grouped by
// time of day (group.go), and is plenty for traffic whose noise is ten
// times that; routing visibility, judged against 1 %
// thresholds, takes twelve bits with a step of 0.2 % (±0.1 %). Every
// format spans a ratio of at least 130 between the smallest and the
// largest value held; a new series puts its first value a factor of 2.2
// under the top. When a value exceeds the top the base moves up and older
// codes shift down, losing resolution only at the very bottom, more than a
// hundred times under the current level, where no detector looks. Code 0
// is "no data" (a feed that was down: unknown, not zero) and code 1 an
// exact zero.
package series

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

const (
	// Step is the ratio between neighbouring codes of the default format:
	// ±2 % quantisation error.
	Step = 1.04

	codeMissing = 0
	codeZero    = 1
	codeMin     = 2
	// span is the smallest ratio between the largest and the smallest
	// value every format holds, and headroom the factor above a series'
	// first value kept free, so ordinary growth does not force a rebase.
	span     = 130
	headroom = 2.2
)

// Format is how finely a ring stores values.
type Format struct {
	bits    uint8
	max     uint32 // largest code
	step    float64
	logStep float64
	head    int32 // codes kept free above the first value
	pow     []float64
}

// Bits is the storage a bucket takes.
func (f *Format) Bits() int { return int(f.bits) }

// Step is the ratio between neighbouring codes.
func (f *Format) Step() float64 { return f.step }

// Precision is the largest relative error of a stored value.
func (f *Format) Precision() float64 { return (f.step - 1) / 2 }

var (
	formatsMu sync.Mutex
	formats   = map[float64]*Format{}
)

// Default is the format of signals that ask for nothing finer: ±2 %.
var Default = FormatFor(0)

// FormatFor returns the format that keeps values within precision (a
// relative error, 0.001 = ±0.1 %) of the truth, in as few bits as that
// and the span allow; 0 or anything coarser than ±2 % gives Default.
func FormatFor(precision float64) *Format {
	step := Step
	if precision > 0 && 1+2*precision < Step {
		step = 1 + 2*precision
	}
	formatsMu.Lock()
	defer formatsMu.Unlock()
	if f := formats[step]; f != nil {
		return f
	}
	ls := math.Log(step)
	bits := bitsFor(step)
	if bits > 16 {
		panic(fmt.Sprintf("series: precision %g needs more than 16 bits", precision))
	}
	f := &Format{bits: bits, max: 1<<bits - 1, step: step, logStep: ls, head: int32(math.Round(math.Log(headroom) / ls))}
	f.pow = make([]float64, f.max+1)
	for k := range f.pow {
		f.pow[k] = math.Pow(step, float64(k))
	}
	formats[step] = f
	return f
}

// bitsFor is the storage a bucket of a format with this step takes.
func bitsFor(step float64) uint8 {
	codes := math.Ceil(math.Log(span)/math.Log(step)) + codeMin + 1
	return uint8(min(math.Ceil(math.Log2(codes)), 64))
}

// StorageBytes is the storage a ring of n buckets of the default format
// needs.
func StorageBytes(n int) int { return Default.StorageBytes(n) }

// StorageBytes is the size of n buckets of f packed at f.Bits() each, as a
// checkpoint holds them and as a ring that does not group holds them in
// memory (two spare bytes let a code be read as one three-byte word
// wherever it sits).
func (f *Format) StorageBytes(n int) int { return (n*int(f.bits)+7)/8 + 2 }

// RingBytes is the memory the codes of a ring of n buckets of the given
// width take: 8 bytes per time of day when the ring groups its days (see
// group), else StorageBytes(n).
func (f *Format) RingBytes(n int, width int64) int {
	perDay, days := layoutOf(int32(n), width)
	if groups(f, days) {
		return 8 * int(perDay)
	}
	return f.StorageBytes(n)
}

// Ring is the history of one series: a fixed number of buckets ending at the
// most recent closed bucket.
type Ring struct {
	f     *Format
	codes []byte // packed codes of f.bits each, or grouped (see group)
	n     int32  // buckets held
	head  int32  // index of the most recent bucket
	base  int32  // exponent of code codeMin
	// perDay and days lay the codes out day-major when the ring holds
	// whole days: the buckets of one time of day on every day held sit
	// side by side, so that a detector comparing a bucket with the same
	// bucket on past days reads one or two cache lines, not one per day.
	// days is 1 (plain order) otherwise.
	perDay, days int32
	// rev counts the changes to buckets already stored (an overwrite, a
	// rebase, a restore), so that a reader that keeps its own summary of
	// the codes (a sorted window) knows when to rebuild it.
	rev  uint16
	init bool // base chosen
	// grouped says the codes of one time of day on every day held are one
	// 64-bit word (see group): two weeks of the default format in 2,304
	// bytes instead of 3,530. spill holds the groups too wide for a word.
	grouped bool
	spill   *spillArea
	last    int64 // bucket start in Unix ns of the head; 0 = empty
	step    int64 // bucket width in ns
	// first is the start of the first bucket ever stored: how much history
	// the series really has, as opposed to how much it can hold.
	first int64
	// scale is step^base, the value of code codeMin.
	scale float64
}

// New returns a ring of the default format holding n buckets of the given
// width.
func New(n int, width int64) *Ring { return NewFormat(Default, n, width) }

// NewFormat returns a ring of format f holding n buckets.
func NewFormat(f *Format, n int, width int64) *Ring {
	r := &Ring{}
	r.Init(f, make([]byte, f.RingBytes(n, width)), n, width)
	return r
}

// Init makes r an empty ring of format f and n buckets over storage, which
// must be f.RingBytes(n, width) zero bytes: an aggregator carves the
// storage of many series out of one slab so that no allocation rounds it
// up.
func (r *Ring) Init(f *Format, storage []byte, n int, width int64) {
	*r = Ring{f: f, codes: storage[:f.RingBytes(n, width)], n: int32(n), step: width}
	r.layout()
}

// layout chooses the day-major order when the ring holds two or more whole
// days of buckets, and the grouped one when it also saves memory.
func (r *Ring) layout() {
	r.perDay, r.days = layoutOf(r.n, r.step)
	r.grouped = groups(r.f, r.days)
}

func layoutOf(n int32, width int64) (perDay, days int32) {
	const day = int64(24 * 3600e9)
	if width <= 0 || day%width != 0 {
		return n, 1
	}
	if p := day / width; p < int64(n) && int64(n)%p == 0 {
		return int32(p), n / int32(p)
	}
	return n, 1
}

// pos is where the code of slot i sits: slot i is i/perDay days after slot
// i%perDay, and its code follows the codes of that time of day on the
// days before.
func (r *Ring) pos(i int32) uint32 {
	if r.days == 1 {
		return uint32(i)
	}
	return uint32(i%r.perDay*r.days + i/r.perDay)
}

// Format returns the ring's format.
func (r *Ring) Format() *Format { return r.f }

// Len is the number of buckets the ring holds.
func (r *Ring) Len() int { return int(r.n) }

// Width is the bucket width in ns.
func (r *Ring) Width() int64 { return r.step }

// Last returns the start time of the most recent bucket, 0 if empty.
func (r *Ring) Last() int64 { return r.last }

// Bytes returns the memory the ring holds, for the per-series figure.
func (r *Ring) Bytes() int {
	n := len(r.codes) + int(unsafe.Sizeof(*r))
	if r.spill != nil {
		n += cap(r.spill.codes) + 4*cap(r.spill.free) + cap(r.spill.ext) + 8*cap(r.spill.wide) + int(unsafe.Sizeof(*r.spill))
	}
	return n
}

func (r *Ring) get(i int32) uint32 {
	if r.grouped {
		return r.groupCode(i%r.perDay, i/r.perDay)
	}
	return r.getP(r.pos(i))
}

func (r *Ring) set(i int32, c uint32) {
	if r.grouped {
		g, d := i%r.perDay, i/r.perDay
		if r.setGroupCode(g, d, uint8(c)) {
			return
		}
		var cs [maxGroupDays]uint8
		r.loadGroup(g, &cs)
		cs[d] = uint8(c)
		if r.storeGroup(g, &cs) {
			return
		}
		r.unGroup()
	}
	r.setP(r.pos(i), c)
	if r.spill != nil {
		r.recheck(i % r.perDay)
	}
}

// getP reads the packed code at storage position p, in the ring's own
// storage or, for a ring that gave up grouping, past its split in ext.
func (r *Ring) getP(p uint32) uint32 {
	if r.spill != nil && p >= r.spill.splitAt {
		return r.f.getAt(r.spill.ext, p-r.spill.splitAt)
	}
	return r.f.getAt(r.codes, p)
}

func (r *Ring) setP(p uint32, c uint32) {
	if r.spill != nil && p >= r.spill.splitAt {
		r.f.setAt(r.spill.ext, p-r.spill.splitAt, c)
		return
	}
	r.f.setAt(r.codes, p, c)
}

// getAt reads the code at position p of packed codes.
func (f *Format) getAt(codes []byte, p uint32) uint32 {
	bit := p * uint32(f.bits)
	b := codes[bit>>3 : bit>>3+3]
	w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
	return w >> (bit & 7) & f.max
}

// setAt writes the code at position p of packed codes.
func (f *Format) setAt(codes []byte, p uint32, c uint32) {
	bit := p * uint32(f.bits)
	b := codes[bit>>3 : bit>>3+3]
	w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
	w = w&^(f.max<<(bit&7)) | c<<(bit&7)
	b[0], b[1], b[2] = byte(w), byte(w>>8), byte(w>>16)
}

// Put stores the value of the bucket starting at t. Buckets between the
// previous one and t are marked missing; a t not after the last bucket
// overwrites it if still held (the detector substitutes predictions for
// outliers this way).
func (r *Ring) Put(t int64, v float64) {
	if r.last == 0 {
		r.last, r.first, r.head = t, t, 0
		r.set(0, r.encode(v))
		return
	}
	if t <= r.last {
		if back := (r.last - t) / r.step; back < int64(r.n) {
			r.set(r.index(int32(back)), r.encode(v))
			r.rev++
		}
		return
	}
	gap := min((t-r.last)/r.step, int64(r.n))
	for i := int64(1); i < gap; i++ {
		r.head = (r.head + 1) % r.n
		r.set(r.head, codeMissing)
	}
	r.head = (r.head + 1) % r.n
	r.last = t
	r.set(r.head, r.encode(v))
}

// code returns the code of the bucket at t, codeMissing when not held.
func (r *Ring) code(t int64) uint32 {
	if r.last == 0 || t > r.last {
		return codeMissing
	}
	back := (r.last - t) / r.step
	if back >= int64(r.n) {
		return codeMissing
	}
	return r.get(r.index(int32(back)))
}

// Code returns the stored code of the bucket starting at t, 0 when it is
// missing or not held. Codes order as their values do, and keep both
// while Rev stays the same: a reader can keep codes instead of values.
func (r *Ring) Code(t int64) uint16 { return uint16(r.code(t)) }

// Decode returns the value a code of Code stands for (as Get would);
// ok is false for the missing code.
func (r *Ring) Decode(c uint16) (v float64, ok bool) {
	switch c {
	case codeMissing:
		return 0, false
	case codeZero:
		return 0, true
	default:
		return r.scale * r.f.pow[c-codeMin], true
	}
}

// Rev changes whenever a code already stored changes: an overwrite of an
// older bucket, a rebase, a restore. Appending a bucket leaves it alone.
func (r *Ring) Rev() uint16 { return r.rev }

// Get returns the value of the bucket starting at t; ok is false when the
// bucket is missing or no longer (or not yet) held.
func (r *Ring) Get(t int64) (v float64, ok bool) { return r.Decode(uint16(r.code(t))) }

// Level returns the bucket at t on the ring's logarithmic scale: levels one
// apart differ by a factor of the format's step, so the distance between two levels
// measures a ratio without computing a logarithm. A zero sits ten levels
// below the smallest value the ring can hold.
func (r *Ring) Level(t int64) (int32, bool) {
	switch c := r.code(t); c {
	case codeMissing:
		return 0, false
	case codeZero:
		return r.base - 10, true
	default:
		return int32(c) - codeMin + r.base, true
	}
}

// Oldest returns the start time of the oldest bucket held: the first
// bucket stored, or the oldest the ring still has room for.
func (r *Ring) Oldest() int64 {
	return max(r.first, r.last-int64(r.n-1)*r.step)
}

func (r *Ring) index(back int32) int32 {
	i := r.head - back
	if i < 0 {
		i += r.n
	}
	return i
}

func (r *Ring) encode(v float64) uint32 {
	switch {
	case math.IsNaN(v):
		return codeMissing
	case v <= 0:
		return codeZero
	}
	top := float64(r.f.max)
	e := math.Round(math.Log(v) / r.f.logStep)
	if !r.init {
		r.base = int32(e) - (int32(r.f.max) - codeMin - r.f.head)
		r.init = true
		r.scale = math.Pow(r.f.step, float64(r.base))
	}
	c := e - float64(r.base) + codeMin
	if c > top {
		r.rebase(int32(c - top))
		c = top
	}
	return uint32(max(c, codeMin))
}

// rebase moves the range up by d codes.
func (r *Ring) rebase(d int32) {
	r.rev++
	r.base += d
	r.scale = math.Pow(r.f.step, float64(r.base))
	if r.grouped {
		var cs [maxGroupDays]uint8
		for g := range r.perDay {
			r.loadGroup(g, &cs)
			for k, c := range cs[:r.days] {
				if c >= codeMin {
					cs[k] = uint8(max(int32(c)-d, codeMin))
				}
			}
			r.storeGroup(g, &cs)
		}
		return
	}
	for p := uint32(0); p < uint32(r.n); p++ { // in storage order: a code's place does not matter here
		if c := r.getP(p); c >= codeMin {
			r.setP(p, uint32(max(int32(c)-d, codeMin)))
		}
	}
}

// MarshalBinary encodes the ring for checkpoints, its codes in slot order
// whatever the layout in memory.
func (r *Ring) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 50+len(r.codes))
	b = binary.AppendUvarint(b, uint64(r.n))
	b = binary.AppendVarint(b, r.step)
	b = binary.AppendVarint(b, r.last)
	b = binary.AppendUvarint(b, uint64(r.head))
	b = binary.AppendVarint(b, int64(r.base))
	b = binary.AppendVarint(b, r.first)
	b = append(b, r.f.bits)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.f.step))
	if r.init {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if r.days == 1 {
		return append(b, r.codes...), nil
	}
	plain := make([]byte, r.f.StorageBytes(int(r.n)))
	for i := int32(0); i < r.n; i++ {
		r.f.setAt(plain, uint32(i), r.get(i))
	}
	return append(b, plain...), nil
}

// UnmarshalBinary restores a ring written by MarshalBinary. The ring keeps
// its own storage when it has the right size.
func (r *Ring) UnmarshalBinary(b []byte) error {
	var vals [6]int64
	for i := range vals {
		var v int64
		var n int
		if i == 0 || i == 3 {
			u, k := binary.Uvarint(b)
			v, n = int64(u), k
		} else {
			v, n = binary.Varint(b)
		}
		if n <= 0 {
			return errors.New("series: truncated ring header")
		}
		vals[i] = v
		b = b[n:]
	}
	if len(b) < 9 {
		return errors.New("series: truncated ring header")
	}
	step := math.Float64frombits(binary.LittleEndian.Uint64(b[1:9]))
	if !(step > 1 && step <= Step) || bitsFor(step) > 16 {
		return fmt.Errorf("series: corrupt ring (step %g)", step)
	}
	f := FormatFor((step - 1) / 2)
	if f.bits != b[0] {
		return fmt.Errorf("series: corrupt ring (%d bits for step %g)", b[0], step)
	}
	b = b[9:]
	size := vals[0]
	if size <= 0 || size > 1<<20 || len(b) != f.StorageBytes(int(size))+1 || vals[3] < 0 || vals[3] >= size || vals[1] <= 0 ||
		vals[4] < math.MinInt32/2 || vals[4] > math.MaxInt32/2 {
		return fmt.Errorf("series: corrupt ring (size %d, %d bytes)", size, len(b))
	}
	codes := r.codes
	if need := f.RingBytes(int(size), vals[1]); len(codes) != need {
		codes = make([]byte, need)
	} else {
		clear(codes)
	}
	*r = Ring{f: f, codes: codes, rev: r.rev + 1, n: int32(size), step: vals[1], last: vals[2], head: int32(vals[3]),
		base: int32(vals[4]), first: vals[5], init: b[0] == 1}
	r.layout()
	switch {
	case r.grouped && r.groupsFit(b[1:]):
		var cs [maxGroupDays]uint8
		for g := range r.perDay {
			for d := range r.days {
				cs[d] = uint8(f.getAt(b[1:], uint32(d*r.perDay+g)))
			}
			r.storeGroup(g, &cs)
		}
	case r.grouped:
		r.split()
		for i := int32(0); i < r.n; i++ {
			r.setP(r.pos(i), f.getAt(b[1:], uint32(i)))
		}
		r.countWide()
	case r.days == 1:
		copy(codes, b[1:])
	default:
		for i := int32(0); i < r.n; i++ {
			r.set(i, f.getAt(b[1:], uint32(i)))
		}
	}
	r.scale = math.Pow(f.step, float64(r.base))
	return nil
}
