// Package series keeps the recent history of one signal for one entity in a
// compact ring: one byte per bucket, so that two weeks of 5-minute buckets
// (4,032 of them) fit in about 4 KiB and a detector can still compare each
// bucket with the same bucket in previous weeks.
//
// Values are stored log-quantised against a per-series base: code c ≥ 2
// stands for Step^(c-2+base), so every stored value is within ±2 % (half a
// step) of the true one whatever its magnitude. Code 0 is "no data" (a feed
// that was down: unknown, not zero) and code 1 is an exact zero. When a value
// exceeds the top of the range the base moves up and older codes shift down,
// losing only resolution at the very bottom, where a detector does not look.
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
	codeMax     = 255
	// headroom is how many codes above the first value are kept free when a
	// series starts, so ordinary growth does not force a rebase.
	headroom = 100
)

var logStep = math.Log(Step)

// pow holds Step^k for every code, so decoding is a table look-up and a
// multiplication rather than an exponential.
var pow [256]float64

func init() {
	for k := range pow {
		pow[k] = math.Pow(Step, float64(k))
	}
}

// Ring is the history of one series: a fixed number of buckets ending at the
// most recent closed bucket.
type Ring struct {
	codes []byte
	// head is the index of the most recent bucket; last its start time.
	head int
	last int64 // bucket start in Unix ns of codes[head]; 0 = empty
	step int64 // bucket width in ns
	base int32 // exponent of code codeMin
	init bool  // base chosen
	// first is the start of the first bucket ever stored: how much history
	// the series really has, as opposed to how much it can hold.
	first int64
	// scale is Step^base, the value of code codeMin.
	scale float64
}

// New returns a ring holding n buckets of the given width.
func New(n int, width int64) *Ring {
	return &Ring{codes: make([]byte, n), step: width}
}

// Len is the number of buckets the ring holds.
func (r *Ring) Len() int { return len(r.codes) }

// Width is the bucket width in ns.
func (r *Ring) Width() int64 { return r.step }

// Last returns the start time of the most recent bucket, 0 if empty.
func (r *Ring) Last() int64 { return r.last }

// Bytes returns the memory the ring holds, for the per-series figure.
func (r *Ring) Bytes() int { return len(r.codes) + 48 }

// Put stores the value of the bucket starting at t. Buckets between the
// previous one and t are marked missing; a t not after the last bucket
// overwrites it if still held (the detector substitutes predictions for
// outliers this way).
func (r *Ring) Put(t int64, v float64) {
	if r.last == 0 {
		r.last, r.first = t, t
		r.head = 0
		r.codes[0] = r.encode(v)
		return
	}
	if t <= r.last {
		back := int((r.last - t) / r.step)
		if back < len(r.codes) {
			r.codes[r.index(back)] = r.encode(v)
		}
		return
	}
	gap := int((t - r.last) / r.step)
	if gap > len(r.codes) {
		gap = len(r.codes)
	}
	for i := 1; i < gap; i++ {
		r.head = (r.head + 1) % len(r.codes)
		r.codes[r.head] = codeMissing
	}
	r.head = (r.head + 1) % len(r.codes)
	r.last = t
	r.codes[r.head] = r.encode(v)
}

// Get returns the value of the bucket starting at t; ok is false when the
// bucket is missing or no longer (or not yet) held.
func (r *Ring) Get(t int64) (v float64, ok bool) {
	if r.last == 0 || t > r.last {
		return 0, false
	}
	back := (r.last - t) / r.step
	if back >= int64(len(r.codes)) {
		return 0, false
	}
	return r.decode(r.codes[r.index(int(back))])
}

// Oldest returns the start time of the oldest bucket held: the first
// bucket stored, or the oldest the ring still has room for.
func (r *Ring) Oldest() int64 {
	return max(r.first, r.last-int64(len(r.codes)-1)*r.step)
}

func (r *Ring) index(back int) int {
	i := r.head - back
	if i < 0 {
		i += len(r.codes)
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
	e := math.Log(v) / logStep
	if !r.init {
		r.base = int32(math.Round(e)) - (codeMax - codeMin - headroom)
		r.init = true
		r.scale = math.Pow(Step, float64(r.base))
	}
	c := math.Round(e) - float64(r.base) + codeMin
	if c > codeMax {
		r.rebase(int32(c - codeMax))
		c = codeMax
	}
	if c < codeMin {
		c = codeMin
	}
	return byte(c)
}

// rebase moves the range up by d codes.
func (r *Ring) rebase(d int32) {
	r.base += d
	r.scale = math.Pow(Step, float64(r.base))
	for i, c := range r.codes {
		if c < codeMin {
			continue
		}
		n := int32(c) - d
		if n < codeMin {
			n = codeMin
		}
		r.codes[i] = byte(n)
	}
}

func (r *Ring) decode(c byte) (float64, bool) {
	switch c {
	case codeMissing:
		return 0, false
	case codeZero:
		return 0, true
	}
	return r.scale * pow[c-codeMin], true
}

// Level returns the bucket at t on the ring's logarithmic scale: levels one
// apart differ by a factor of Step, so the distance between two levels
// measures a ratio without computing a logarithm. A zero sits ten levels
// below the smallest value the ring can hold.
func (r *Ring) Level(t int64) (int32, bool) {
	if r.last == 0 || t > r.last {
		return 0, false
	}
	back := (r.last - t) / r.step
	if back >= int64(len(r.codes)) {
		return 0, false
	}
	switch c := r.codes[r.index(int(back))]; c {
	case codeMissing:
		return 0, false
	case codeZero:
		return r.base - 10, true
	default:
		return int32(c) - codeMin + r.base, true
	}
}

// MarshalBinary encodes the ring for checkpoints.
func (r *Ring) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 32+len(r.codes))
	b = binary.AppendUvarint(b, uint64(len(r.codes)))
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

// UnmarshalBinary restores a ring written by MarshalBinary.
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
	if size <= 0 || size > 1<<20 || len(b) != int(size)+1 || vals[3] >= size || vals[1] <= 0 {
		return fmt.Errorf("series: corrupt ring (size %d, %d bytes)", size, len(b))
	}
	r.codes = append(r.codes[:0], b[1:]...)
	r.step, r.last, r.head, r.base, r.first, r.init = vals[1], vals[2], int(vals[3]), int32(vals[4]), vals[5], b[0] == 1
	r.scale = math.Pow(Step, float64(r.base))
	return nil
}
