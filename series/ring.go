// Package series keeps the recent history of one signal for one entity in a
// compact ring: seven bits per bucket, so that two weeks of 5-minute buckets
// (4,032 of them) take 3,529 bytes and a tracked series, with its
// bookkeeping, stays under 4 KiB, while a detector can still compare each
// bucket with the same bucket on earlier days.
//
// Values are stored log-quantised against a per-series base: code c ≥ 2
// stands for Step^(c-2+base), so every stored value is within ±2 % (half a
// step) of the true one. The 126 value codes span a ratio of 140 between
// the smallest and the largest value held; a new series puts its first value
// 20 codes (a factor of 2.2) under the top. When a value exceeds the top the
// base moves up and older codes shift down, losing resolution only at the
// very bottom, more than a hundred times under the current level, where no
// detector looks: a drop to under 1 % reads as "under 1 %". Code 0 is "no
// data" (a feed that was down: unknown, not zero) and code 1 an exact zero.
package series

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

const (
	// Step is the ratio between neighbouring codes: ±2 % quantisation error.
	Step = 1.04

	codeMissing = 0
	codeZero    = 1
	codeMin     = 2
	codeMax     = 127
	bits        = 7
	// headroom is how many codes above the first value are kept free when a
	// series starts, so ordinary growth does not force a rebase.
	headroom = 20
)

var logStep = math.Log(Step)

// pow holds Step^k for every code, so decoding is a table look-up and a
// multiplication rather than an exponential.
var pow [codeMax + 1]float64

func init() {
	for k := range pow {
		pow[k] = math.Pow(Step, float64(k))
	}
}

// StorageBytes is the storage a ring of n buckets needs.
func StorageBytes(n int) int { return (n*bits+7)/8 + 1 }

// Ring is the history of one series: a fixed number of buckets ending at the
// most recent closed bucket.
type Ring struct {
	codes []byte // packed 7-bit codes
	n     int32  // buckets held
	head  int32  // index of the most recent bucket
	base  int32  // exponent of code codeMin
	init  bool   // base chosen
	last  int64  // bucket start in Unix ns of the head; 0 = empty
	step  int64  // bucket width in ns
	// first is the start of the first bucket ever stored: how much history
	// the series really has, as opposed to how much it can hold.
	first int64
	// scale is Step^base, the value of code codeMin.
	scale float64
}

// New returns a ring holding n buckets of the given width.
func New(n int, width int64) *Ring {
	r := &Ring{}
	r.Init(make([]byte, StorageBytes(n)), n, width)
	return r
}

// Init makes r an empty ring of n buckets over storage, which must be
// StorageBytes(n) zero bytes: an aggregator carves the storage of many
// series out of one slab so that no allocation rounds it up.
func (r *Ring) Init(storage []byte, n int, width int64) {
	*r = Ring{codes: storage[:StorageBytes(n)], n: int32(n), step: width}
}

// Len is the number of buckets the ring holds.
func (r *Ring) Len() int { return int(r.n) }

// Width is the bucket width in ns.
func (r *Ring) Width() int64 { return r.step }

// Last returns the start time of the most recent bucket, 0 if empty.
func (r *Ring) Last() int64 { return r.last }

// Bytes returns the memory the ring holds, for the per-series figure.
func (r *Ring) Bytes() int { return len(r.codes) + 64 }

func (r *Ring) get(i int32) byte {
	bit := uint32(i) * bits
	w := uint16(r.codes[bit>>3]) | uint16(r.codes[bit>>3+1])<<8
	return byte(w>>(bit&7)) & codeMax
}

func (r *Ring) set(i int32, c byte) {
	bit := uint32(i) * bits
	w := uint16(r.codes[bit>>3]) | uint16(r.codes[bit>>3+1])<<8
	w = w&^(codeMax<<(bit&7)) | uint16(c)<<(bit&7)
	r.codes[bit>>3], r.codes[bit>>3+1] = byte(w), byte(w>>8)
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
func (r *Ring) code(t int64) byte {
	if r.last == 0 || t > r.last {
		return codeMissing
	}
	back := (r.last - t) / r.step
	if back >= int64(r.n) {
		return codeMissing
	}
	return r.get(r.index(int32(back)))
}

// Get returns the value of the bucket starting at t; ok is false when the
// bucket is missing or no longer (or not yet) held.
func (r *Ring) Get(t int64) (v float64, ok bool) {
	switch c := r.code(t); c {
	case codeMissing:
		return 0, false
	case codeZero:
		return 0, true
	default:
		return r.scale * pow[c-codeMin], true
	}
}

// Level returns the bucket at t on the ring's logarithmic scale: levels one
// apart differ by a factor of Step, so the distance between two levels
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

func (r *Ring) encode(v float64) byte {
	switch {
	case math.IsNaN(v):
		return codeMissing
	case v <= 0:
		return codeZero
	}
	e := math.Round(math.Log(v) / logStep)
	if !r.init {
		r.base = int32(e) - (codeMax - codeMin - headroom)
		r.init = true
		r.scale = math.Pow(Step, float64(r.base))
	}
	c := e - float64(r.base) + codeMin
	if c > codeMax {
		r.rebase(int32(c - codeMax))
		c = codeMax
	}
	return byte(max(c, codeMin))
}

// rebase moves the range up by d codes.
func (r *Ring) rebase(d int32) {
	r.base += d
	r.scale = math.Pow(Step, float64(r.base))
	for i := int32(0); i < r.n; i++ {
		if c := r.get(i); c >= codeMin {
			r.set(i, byte(max(int32(c)-d, codeMin)))
		}
	}
}

// MarshalBinary encodes the ring for checkpoints.
func (r *Ring) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 40+len(r.codes))
	b = binary.AppendUvarint(b, uint64(r.n))
	b = binary.AppendVarint(b, r.step)
	b = binary.AppendVarint(b, r.last)
	b = binary.AppendUvarint(b, uint64(r.head))
	b = binary.AppendVarint(b, int64(r.base))
	b = binary.AppendVarint(b, r.first)
	if r.init {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return append(b, r.codes...), nil
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
	size := vals[0]
	if size <= 0 || size > 1<<20 || len(b) != StorageBytes(int(size))+1 || vals[3] < 0 || vals[3] >= size || vals[1] <= 0 ||
		vals[4] < math.MinInt32/2 || vals[4] > math.MaxInt32/2 {
		return fmt.Errorf("series: corrupt ring (size %d, %d bytes)", size, len(b))
	}
	codes := r.codes
	if len(codes) != len(b)-1 {
		codes = make([]byte, len(b)-1)
	}
	copy(codes, b[1:])
	*r = Ring{codes: codes, n: int32(size), step: vals[1], last: vals[2], head: int32(vals[3]),
		base: int32(vals[4]), first: vals[5], init: b[0] == 1}
	r.scale = math.Pow(Step, float64(r.base))
	return nil
}
