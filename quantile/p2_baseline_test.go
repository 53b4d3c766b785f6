// P² (Jain and Chlamtac, "The P² algorithm for dynamic calculation of
// quantiles and histograms without storing observations", CACM 28(10),
// 1985) was outagewatch's quantile estimator before the mergeable sketch: five
// markers per quantile, no allocation, but no merge. It stays here, in a
// test file, as the baseline the benchmarks and the accuracy test measure
// the sketch against.

package quantile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// P2 is a P² estimator of a single quantile. The zero value is not usable:
// create one with New. P2 holds no pointers, so copying it copies the state;
// it is not safe for concurrent use.
type P2 struct {
	q     float64    // the quantile estimated, in (0, 1)
	n     uint64     // samples seen
	h     [5]float64 // marker heights; the raw samples while n < 5
	pos   [5]uint64  // marker positions, 1-based ranks
	dnMid [3]float64 // desired-position increments of the inner markers
}

// New returns an estimator of quantile q (0.5 for the median, 0.95 for the
// 95th percentile). q must lie strictly between 0 and 1; anything else is a
// programming error and panics.
func NewP2(q float64) *P2 {
	e := &P2{}
	e.init(q)
	return e
}

func (e *P2) init(q float64) {
	if !(q > 0 && q < 1) {
		panic(fmt.Sprintf("NewP2(%v): q must be in (0, 1)", q))
	}
	*e = P2{q: q, dnMid: [3]float64{q / 2, q, (1 + q) / 2}}
}

// Q returns the quantile the estimator was built for.
func (e *P2) Q() float64 { return e.q }

// Count returns the number of samples added since the last Reset.
func (e *P2) Count() uint64 { return e.n }

// Reset forgets every sample but keeps q, so that pooled estimators are
// reused without allocating.
func (e *P2) Reset() {
	e.n = 0
	e.h = [5]float64{}
	e.pos = [5]uint64{}
}

// Add adds one sample. NaN and infinite samples are ignored: a corrupt RTT
// must not poison every later estimate of the bucket.
func (e *P2) Add(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	if e.n < 5 {
		e.h[e.n] = x
		e.n++
		if e.n == 5 {
			slices.Sort(e.h[:])
			e.pos = [5]uint64{1, 2, 3, 4, 5}
		}
		return
	}
	e.n++
	h, pos := &e.h, &e.pos
	// Find the cell k with h[k] <= x < h[k+1], widening the extremes.
	var k int
	switch {
	case x < h[0]:
		h[0] = x
		k = 0
	case x < h[1]:
		k = 0
	case x < h[2]:
		k = 1
	case x < h[3]:
		k = 2
	case x <= h[4]:
		k = 3
	default:
		h[4] = x
		k = 3
	}
	for i := k + 1; i < 5; i++ {
		pos[i]++
	}
	// Desired positions are computed from the count rather than accumulated,
	// so they never drift and need not be checkpointed.
	nm1 := float64(e.n - 1)
	for i := 1; i <= 3; i++ {
		want := 1 + nm1*e.dnMid[i-1]
		d := want - float64(pos[i])
		switch {
		case d >= 1 && pos[i+1]-pos[i] > 1:
			e.adjust(i, 1)
		case d <= -1 && pos[i]-pos[i-1] > 1:
			e.adjust(i, -1)
		}
	}
}

// adjust moves marker i by d (±1) and sets its height by the piecewise
// parabolic formula, or linearly when the parabola would leave the interval
// between the neighbouring markers.
func (e *P2) adjust(i int, d float64) {
	h, pos := &e.h, &e.pos
	ni, nl, nr := float64(pos[i]), float64(pos[i-1]), float64(pos[i+1])
	hp := h[i] + d/(nr-nl)*((ni-nl+d)*(h[i+1]-h[i])/(nr-ni)+(nr-ni-d)*(h[i]-h[i-1])/(ni-nl))
	if h[i-1] < hp && hp < h[i+1] {
		h[i] = hp
	} else if d > 0 {
		h[i] += (h[i+1] - h[i]) / (nr - ni)
	} else {
		h[i] -= (h[i-1] - h[i]) / (nl - ni)
	}
	if d > 0 {
		pos[i]++
	} else {
		pos[i]--
	}
}

// Quantile returns the estimate, or NaN before the first sample. With fewer
// than five samples it is exact (linear interpolation between closest ranks).
func (e *P2) Quantile() float64 {
	if e.n == 0 {
		return math.NaN()
	}
	if e.n >= 5 {
		return e.h[2]
	}
	s := e.h // a copy on the stack: Quantile must not disturb later Adds
	v := s[:e.n]
	slices.Sort(v)
	r := e.q * float64(e.n-1)
	lo := int(r)
	if lo+1 >= len(v) {
		return v[lo]
	}
	f := r - float64(lo)
	return v[lo] + f*(v[lo+1]-v[lo])
}

// Min returns the smallest sample seen, or NaN before the first.
func (e *P2) Min() float64 {
	switch {
	case e.n == 0:
		return math.NaN()
	case e.n >= 5:
		return e.h[0]
	}
	return slices.Min(e.h[:e.n])
}

// Max returns the largest sample seen, or NaN before the first.
func (e *P2) Max() float64 {
	switch {
	case e.n == 0:
		return math.NaN()
	case e.n >= 5:
		return e.h[4]
	}
	return slices.Max(e.h[:e.n])
}

// Binary form (little endian), fixed size so checkpoints of many series can
// be laid out without framing: version byte, q, count, five heights, five
// positions.
const (
	p2BinVersion = 1
	// p2BinarySize is the length of the binary form of a P2.
	p2BinarySize = 1 + 8 + 8 + 5*8 + 5*8
)

// AppendBinary appends the estimator's state to b; checkpoint writers use it
// to serialise many estimators into one buffer without allocating.
func (e *P2) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, p2BinVersion)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.q))
	b = binary.LittleEndian.AppendUint64(b, e.n)
	for _, h := range e.h {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h))
	}
	for _, p := range e.pos {
		b = binary.LittleEndian.AppendUint64(b, p)
	}
	return b, nil
}

// MarshalBinary returns the estimator's state for a checkpoint.
func (e *P2) MarshalBinary() ([]byte, error) {
	return e.AppendBinary(make([]byte, 0, p2BinarySize))
}

// errP2Corrupt reports a binary form that no P2 could have written.
var errP2Corrupt = errors.New("quantile: corrupt P2 state")

// UnmarshalBinary restores a state written by MarshalBinary. It checks the
// invariants of the algorithm, so that a damaged checkpoint is refused
// instead of producing estimates outside the range of the data.
func (e *P2) UnmarshalBinary(b []byte) error {
	if len(b) != p2BinarySize {
		return fmt.Errorf("%w: %d bytes, want %d", errP2Corrupt, len(b), p2BinarySize)
	}
	if b[0] != p2BinVersion {
		return fmt.Errorf("%w: version %d", errP2Corrupt, b[0])
	}
	var s P2
	q := math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))
	if !(q > 0 && q < 1) {
		return fmt.Errorf("%w: q %v", errP2Corrupt, q)
	}
	s.init(q)
	s.n = binary.LittleEndian.Uint64(b[9:])
	if s.n > 1<<62 {
		return fmt.Errorf("%w: count %d", errP2Corrupt, s.n)
	}
	for i := range s.h {
		s.h[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[17+8*i:]))
		if math.IsNaN(s.h[i]) || math.IsInf(s.h[i], 0) {
			return fmt.Errorf("%w: marker height %v", errP2Corrupt, s.h[i])
		}
	}
	for i := range s.pos {
		s.pos[i] = binary.LittleEndian.Uint64(b[57+8*i:])
	}
	if s.n >= 5 {
		if s.pos[0] != 1 || s.pos[4] != s.n {
			return fmt.Errorf("%w: end markers at %d and %d with %d samples", errP2Corrupt, s.pos[0], s.pos[4], s.n)
		}
		for i := 1; i < 5; i++ {
			if s.pos[i] <= s.pos[i-1] || s.h[i] < s.h[i-1] {
				return fmt.Errorf("%w: markers out of order", errP2Corrupt)
			}
		}
	} else {
		for i := s.n; i < 5; i++ {
			if s.h[i] != 0 {
				return fmt.Errorf("%w: stray sample beyond count %d", errP2Corrupt, s.n)
			}
		}
		if s.pos != [5]uint64{} {
			return fmt.Errorf("%w: positions set with %d samples", errP2Corrupt, s.n)
		}
	}
	*e = s
	return nil
}
