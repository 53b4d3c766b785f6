// Package quantile summarises the samples of one open bucket (the RTTs or
// bandwidths of a series) so that any quantile can be read from it, and so
// that summaries built apart (one per input partition of a scaled-out first
// stage) merge into the summary one process fed every sample would hold.
//
// The summary is a DDSketch (Masson, Rim and Lee, "DDSketch: a fast and
// fully-mergeable quantile sketch with relative-error guarantees", VLDB
// 2019), from DataDog/sketches-go: samples are counted in logarithmically
// spaced bins, so every quantile is within RelativeAccuracy of the sample
// at its rank. A bin count is a whole number and a merge adds counts bin by
// bin, so merging is lossless: the merged sketch has exactly the bins, and
// gives exactly the quantiles, of a sketch fed every sample. P², which this
// package held before, kept five markers per quantile and could not merge.
//
// The sketch also keeps the exact count, minimum and maximum, which merge
// exactly too, and clamps answers to them, so that a bucket of one sample
// reports that sample and the extremes are never beyond the data.
package quantile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// RelativeAccuracy bounds the relative error of a quantile: the answer lies
// within 1 % of the sample at the quantile's rank. A latency series is
// stored with ±2 % precision and judged against thresholds of tens of
// percent, so a finer sketch would only cost bins.
const RelativeAccuracy = 0.01

// bins is the one index mapping every sketch shares: it is immutable, and
// sketches merge only if their mappings are equal.
//
// The mapping is sketches-go's cubically interpolated one: it keeps the
// same accuracy guarantee as the logarithmic mapping with about 1 % more
// bins (its base is the logarithmic one's to the power 10·ln2/7), and finds
// a bin from the float's exponent and a cubic polynomial of its mantissa
// instead of a logarithm, which cut the CPU time of Add by about 40 % when
// measured (BenchmarkSummary: 31–35 ns against 47–58 ns). Changing it
// changes every bin index, so it is part of the binary form's version.
var bins = func() *mapping.CubicallyInterpolatedMapping {
	m, err := mapping.NewCubicallyInterpolatedMapping(RelativeAccuracy)
	if err != nil {
		panic(err)
	}
	return m
}()

// Bounds of the mapping: magnitudes below minValue count as zero, those
// above maxValue cannot be binned; a decoded bin outside [minBin, maxBin]
// could not have been written by Add, and would make a dense store
// allocate for nothing.
var (
	minValue, maxValue = bins.MinIndexableValue(), bins.MaxIndexableValue()
	minBin, maxBin     = bins.Index(minValue), bins.Index(maxValue)
)

// Sketch is a mergeable quantile summary: a DDSketch made of sketches-go's
// mapping and dense stores, driven directly rather than through its
// DDSketch type, so that an Add is one concrete call into a store the
// Sketch points to (three pointer hops fewer, which shows once thousands of
// series' sketches compete for the cache). The zero value is empty and
// ready; the bins are allocated at the first sample of a sign and kept
// across Reset, so a pooled sketch is reused without allocating. Not safe
// for concurrent use.
type Sketch struct {
	pos, neg *store.DenseStore // bins of positive values and of magnitudes of negative ones; nil until used
	zero     int64             // samples too close to 0 to bin
	n        int64
	min, max float64
}

// Add adds one sample. NaN and infinite samples are ignored: a corrupt RTT
// must not poison every later quantile of the bucket.
func (s *Sketch) Add(x float64) {
	switch {
	case x > minValue:
		if x > maxValue {
			return // +Inf, or beyond 1.7e308: not a measurement
		}
		if s.pos == nil {
			s.pos = store.NewDenseStore()
		}
		s.pos.Add(bins.Index(x))
	case x < -minValue:
		if x < -maxValue {
			return
		}
		if s.neg == nil {
			s.neg = store.NewDenseStore()
		}
		s.neg.Add(bins.Index(-x))
	case x == x: // not NaN
		s.zero++
	default:
		return
	}
	if s.n == 0 || x < s.min {
		s.min = x
	}
	if s.n == 0 || x > s.max {
		s.max = x
	}
	s.n++
}

// AddCount adds count samples of value x, as Add would one by one; a count
// below 1 adds nothing.
func (s *Sketch) AddCount(x float64, count int64) {
	if count < 1 {
		return
	}
	n := s.n
	s.Add(x)
	if s.n == n || count == 1 {
		return
	}
	c := float64(count - 1)
	switch {
	case x > minValue:
		s.pos.AddWithCount(bins.Index(x), c)
	case x < -minValue:
		s.neg.AddWithCount(bins.Index(-x), c)
	default:
		s.zero += count - 1
	}
	s.n += count - 1
}

// Count returns the number of samples added since the last Reset.
func (s *Sketch) Count() int64 { return s.n }

// Min returns the smallest sample, or NaN before the first.
func (s *Sketch) Min() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.min
}

// Max returns the largest sample, or NaN before the first.
func (s *Sketch) Max() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.max
}

// Reset forgets every sample and keeps the bins' memory.
func (s *Sketch) Reset() {
	if s.pos != nil {
		s.pos.Clear()
	}
	if s.neg != nil {
		s.neg.Clear()
	}
	s.zero, s.n, s.min, s.max = 0, 0, 0, 0
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) interpolated linearly between
// the samples of the closest ranks, as numpy and R's default do; NaN when
// the sketch is empty or q is out of range. Each of those two samples is
// known to within RelativeAccuracy; the smallest and largest exactly.
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	r := q * float64(s.n-1)
	lo := math.Floor(r)
	v := s.atRank(lo)
	if f := r - lo; f > 0 {
		v += f * (s.atRank(lo+1) - v)
	}
	return v
}

// atRank returns the sample of 0-based rank r: exact at the ends, otherwise
// its bin's value, clamped to the samples' range.
func (s *Sketch) atRank(r float64) float64 {
	switch {
	case r <= 0:
		return s.min
	case r >= float64(s.n-1):
		return s.max
	}
	return min(max(s.atBinRank(r), s.min), s.max)
}

// Merge adds the samples summarised by o; o is left as it was.
func (s *Sketch) Merge(o *Sketch) error {
	if o == nil || o.n == 0 {
		return nil
	}
	if o.pos != nil {
		if s.pos == nil {
			s.pos = store.NewDenseStore()
		}
		s.pos.MergeWith(o.pos)
	}
	if o.neg != nil {
		if s.neg == nil {
			s.neg = store.NewDenseStore()
		}
		s.neg.MergeWith(o.neg)
	}
	s.zero += o.zero
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	return nil
}

// Binary form: a version byte (2; 1 was the fixed 97-byte P² state), the
// count (uvarint); then, if it is not zero, the minimum and maximum
// (float64, little endian), the count of samples in the zero bin (uvarint),
// and the positive then the negative bins, each as the number of bins
// (uvarint) followed by (index delta (varint), count (uvarint)) pairs in
// increasing index order. sketches-go has an encoding of its own, but its
// decoder ignores errors in the bins and trusts their indexes; this form is
// checked field by field, so a damaged checkpoint or partial is refused.
const binVersion = 2

// AppendBinary appends the sketch's binary form to b.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, binVersion)
	b = binary.AppendUvarint(b, uint64(s.n))
	if s.n == 0 {
		return b, nil
	}
	stores := [2]*store.DenseStore{s.pos, s.neg}
	var nb [2]int
	for i, st := range stores {
		if st != nil {
			st.ForEach(func(int, float64) bool { nb[i]++; return false })
		}
	}
	// Each bin takes a byte or two of index delta and a byte or two of count.
	b = slices.Grow(b, 16+3*binary.MaxVarintLen64+4*(nb[0]+nb[1]))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.min))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.max))
	b = binary.AppendUvarint(b, uint64(s.zero))
	for i, st := range stores {
		b = binary.AppendUvarint(b, uint64(nb[i]))
		if st == nil {
			continue
		}
		prev := 0
		st.ForEach(func(i int, c float64) bool {
			b = binary.AppendVarint(b, int64(i-prev))
			b = binary.AppendUvarint(b, uint64(c))
			prev = i
			return false
		})
	}
	return b, nil
}

// MarshalBinary returns the sketch's binary form.
func (s *Sketch) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// ErrCorrupt reports a binary form that no Sketch could have written.
var ErrCorrupt = errors.New("quantile: corrupt sketch")

// UnmarshalBinary replaces the sketch with a binary form written by
// MarshalBinary. It checks every field, so that a damaged state is refused
// with an error rather than answering quantiles outside the data; on error
// the sketch is left empty.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	s.Reset()
	if err := s.decode(b); err != nil {
		s.Reset()
		return err
	}
	return nil
}

func (s *Sketch) decode(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != binVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrCorrupt, b[0], binVersion)
	}
	b = b[1:]
	n, err := uvarint(&b, "count")
	if err != nil {
		return err
	}
	if n > 1<<53 { // counts are float64 bins: exact only up to 2⁵³
		return fmt.Errorf("%w: count %d", ErrCorrupt, n)
	}
	if n == 0 {
		if len(b) != 0 {
			return fmt.Errorf("%w: %d bytes after an empty sketch", ErrCorrupt, len(b))
		}
		return nil
	}
	if len(b) < 16 {
		return fmt.Errorf("%w: truncated range", ErrCorrupt)
	}
	lo := math.Float64frombits(binary.LittleEndian.Uint64(b))
	hi := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	b = b[16:]
	if math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) || lo > hi {
		return fmt.Errorf("%w: range [%v, %v]", ErrCorrupt, lo, hi)
	}
	zero, err := uvarint(&b, "zero count")
	if err != nil {
		return err
	}
	if zero > n {
		return fmt.Errorf("%w: %d zeros of %d samples", ErrCorrupt, zero, n)
	}
	total := zero
	for _, st := range []**store.DenseStore{&s.pos, &s.neg} {
		nb, err := uvarint(&b, "bin count")
		if err != nil {
			return err
		}
		if nb > uint64(len(b)/2) { // each bin takes two bytes at least
			return fmt.Errorf("%w: %d bins in %d bytes", ErrCorrupt, nb, len(b))
		}
		idx := int64(0)
		for i := range nb {
			d, k := binary.Varint(b)
			if k <= 0 {
				return fmt.Errorf("%w: bad bin index", ErrCorrupt)
			}
			b = b[k:]
			if i > 0 && d <= 0 {
				return fmt.Errorf("%w: bins out of order", ErrCorrupt)
			}
			if d < int64(minBin)-idx || d > int64(maxBin)-idx {
				return fmt.Errorf("%w: bin index out of range", ErrCorrupt)
			}
			idx += d
			c, err := uvarint(&b, "bin")
			if err != nil {
				return err
			}
			if c == 0 || c > n-total {
				return fmt.Errorf("%w: bin of %d samples with %d left of %d", ErrCorrupt, c, n-total, n)
			}
			total += c
			if *st == nil {
				*st = store.NewDenseStore()
			}
			(*st).AddWithCount(int(idx), float64(c))
		}
	}
	if total != n {
		return fmt.Errorf("%w: bins hold %d samples, count says %d", ErrCorrupt, total, n)
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
	}
	s.zero, s.n, s.min, s.max = int64(zero), int64(n), lo, hi
	// The extremes must lie in the lowest and highest bins, as Add put them.
	if s.binOf(lo) != s.binOf(s.atBinRank(0)) || s.binOf(hi) != s.binOf(s.atBinRank(float64(n-1))) {
		return fmt.Errorf("%w: range [%v, %v] outside its bins", ErrCorrupt, lo, hi)
	}
	return nil
}

// atBinRank is the bin value of rank r, unclamped.
func (s *Sketch) atBinRank(r float64) float64 {
	var nn float64
	if s.neg != nil {
		nn = s.neg.TotalCount()
	}
	switch {
	case r < nn:
		return -bins.Value(s.neg.KeyAtRank(nn - 1 - r))
	case r < nn+float64(s.zero):
		return 0
	}
	return bins.Value(s.pos.KeyAtRank(r - nn - float64(s.zero)))
}

// binOf names the bin x falls in: 0 for the zero bin, its index offset by
// 2⁴⁰ for a positive bin and the same negated for a negative one, so that
// the three kinds never share a name.
func (s *Sketch) binOf(x float64) int64 {
	switch {
	case x > minValue:
		return int64(bins.Index(x)) + 1<<40
	case x < -minValue:
		return -(int64(bins.Index(-x)) + 1<<40)
	}
	return 0
}

func uvarint(b *[]byte, what string) (uint64, error) {
	v, k := binary.Uvarint(*b)
	if k <= 0 {
		return 0, fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
	*b = (*b)[k:]
	return v, nil
}
