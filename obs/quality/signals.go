// Package quality defines the signals of the Internet-quality feed
// (latency, bandwidth and packet-loss percentiles and ratios, with the
// accumulators that fold a bucket's samples into them) and the names of its
// path and probe entities. It is the model half of the feed: the decoders
// in ingest/quality produce these signals and names, and the detectors
// judge them, without either knowing the other.
//
// Latency and bandwidth are bucketed as percentiles rather than means because
// an outage shows as a shift of the typical value (the Iberian blackout moved
// median RTT from 22 ms to 40 ms), which a handful of retransmitted packets
// with second-long RTTs would swamp in a mean. Each RTT sample is one
// observation, fed to a mergeable quantile sketch per open bucket (package
// quantile), so the cost of a bucket grows with the spread of its samples,
// not with the number of probes, and partial buckets from several input
// partitions merge into the bucket one process would have seen.
package quality

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/quantile"
)

// Signals of the quality feed.
var (
	// LatencyP50 is the median RTT in milliseconds of the samples in a bucket;
	// the count is the number of RTT samples.
	LatencyP50 = obs.Register(obs.SignalDef{Name: "latency_p50", Unit: "ms", Feed: obs.FeedQuality, Agg: obs.Custom,
		NewAccumulator: func() obs.Accumulator { return NewQuantileAccumulator(0.5) }})
	// LatencyP95 is the 95th percentile RTT in milliseconds.
	LatencyP95 = obs.Register(obs.SignalDef{Name: "latency_p95", Unit: "ms", Feed: obs.FeedQuality, Agg: obs.Custom,
		NewAccumulator: func() obs.Accumulator { return NewQuantileAccumulator(0.95) }})
	// LatencyMin is the lowest RTT in milliseconds of the samples in a
	// bucket: the path's delay without queueing, the quantity TCP tracks
	// as a path's base delay (Vegas' BaseRTT, BBR's min_rtt). It is kept
	// for one probe's series towards one destination only (see
	// ingest/quality): over many probes the lowest RTT is the nearest
	// probe's, which says nothing of any path. A median of a bucket's two
	// samples, one queued, is a value at neither the path's level nor the
	// queue's; the lowest is at the path's.
	LatencyMin = obs.Register(obs.SignalDef{Name: "latency_min", Unit: "ms", Feed: obs.FeedQuality, Agg: obs.Custom,
		NewAccumulator: func() obs.Accumulator { return &MinAccumulator{} }})
	// BandwidthP50 is the median measured bandwidth in Mbit/s.
	BandwidthP50 = obs.Register(obs.SignalDef{Name: "bandwidth_p50", Unit: "Mbps", Feed: obs.FeedQuality, Agg: obs.Custom,
		NewAccumulator: func() obs.Accumulator { return NewQuantileAccumulator(0.5) }})
	// PacketLoss is the ratio of packets lost to packets sent over the bucket,
	// weighted by packets sent: a probe that sent 100 packets counts 100 times
	// as much as one that sent 1. Each observation carries the loss ratio of
	// one measurement in Value and the packets it sent in Hash (see
	// LossAccumulator); the bucket count is the number of packets sent.
	PacketLoss = obs.Register(obs.SignalDef{Name: "packet_loss", Unit: "ratio", Feed: obs.FeedQuality, Agg: obs.Custom,
		NewAccumulator: func() obs.Accumulator { return &LossAccumulator{} }})
)

// QuantileAccumulator folds a bucket's samples into one quantile. It is a
// thin obs.Mergeable over quantile.Sketch: its state holds every sample's
// bin, not the quantile, so the p50 and p95 accumulators differ only in the
// quantile they read, and merging partial buckets is lossless.
type QuantileAccumulator struct {
	q  float64
	sk quantile.Sketch
}

var _ obs.Mergeable = (*QuantileAccumulator)(nil)

// NewQuantileAccumulator returns an accumulator of quantile q, in (0, 1).
// Any other q is a programming error and panics.
func NewQuantileAccumulator(q float64) *QuantileAccumulator {
	if !(q > 0 && q < 1) {
		panic(fmt.Sprintf("quality: quantile %v not in (0, 1)", q))
	}
	return &QuantileAccumulator{q: q}
}

// Add adds o.Value as one sample.
func (a *QuantileAccumulator) Add(o *obs.Observation) { a.sk.Add(o.Value) }

// Result returns the quantile and the number of samples behind it; NaN for
// an empty bucket.
func (a *QuantileAccumulator) Result() (float64, int64) {
	return a.sk.Quantile(a.q), a.sk.Count()
}

// Reset empties the accumulator for reuse, keeping the sketch's bins.
func (a *QuantileAccumulator) Reset() { a.sk.Reset() }

// Merge folds in the samples of other, a *QuantileAccumulator of the same
// signal.
func (a *QuantileAccumulator) Merge(other obs.Accumulator) error {
	o, ok := other.(*QuantileAccumulator)
	if !ok {
		return fmt.Errorf("quality: merge %T into a quantile accumulator", other)
	}
	if o.q != a.q {
		return fmt.Errorf("quality: merge a q=%v accumulator into q=%v", o.q, a.q)
	}
	if err := a.sk.Merge(&o.sk); err != nil {
		return fmt.Errorf("quality: %w", err)
	}
	return nil
}

// MarshalBinary returns the sketch's state for a checkpoint or a partial
// bucket. The state does not name q: the aggregator restores it into an
// accumulator made by the signal.
func (a *QuantileAccumulator) MarshalBinary() ([]byte, error) { return a.sk.MarshalBinary() }

// UnmarshalBinary restores a state written by MarshalBinary, or the P²
// state that checkpoints of earlier versions hold for an open bucket.
func (a *QuantileAccumulator) UnmarshalBinary(b []byte) error {
	if len(b) == p2StateSize && b[0] == p2StateVersion {
		return a.fromP2(b)
	}
	if err := a.sk.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("quality: restore quantile accumulator: %w", err)
	}
	return nil
}

// The P² estimator's state (version byte 1, then little endian: q, sample
// count, five marker heights, five marker positions), which earlier
// versions wrote for the open buckets of quantile signals.
const (
	p2StateVersion = 1
	p2StateSize    = 1 + 8 + 8 + 5*8 + 5*8
)

// fromP2 turns a P² state into a sketch, so that a checkpoint written
// before the sketch existed still restores instead of stopping the
// service. Below five samples P² kept the samples themselves, which are
// added as they were; from five on, each marker stands for the samples ranked
// after the previous marker up to its own rank, so that the sketch holds
// the markers at the ranks P² kept them and the bucket's quantile comes
// back approximately: good enough for the buckets open across an upgrade.
func (a *QuantileAccumulator) fromP2(b []byte) error {
	u64 := func(i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
	n := u64(9)
	var h [5]float64
	var pos [5]uint64
	for i := range 5 {
		h[i] = math.Float64frombits(u64(17 + 8*i))
		pos[i] = u64(57 + 8*i)
		if math.IsNaN(h[i]) || math.IsInf(h[i], 0) {
			return fmt.Errorf("quality: restore P² state: marker height %v", h[i])
		}
	}
	a.sk.Reset()
	if n < 5 {
		for _, x := range h[:n] {
			a.sk.Add(x)
		}
		return nil
	}
	if n > 1<<53 || pos[0] != 1 || pos[4] != n {
		return fmt.Errorf("quality: restore P² state: end markers at %d and %d with %d samples", pos[0], pos[4], n)
	}
	for i := 1; i < 5; i++ {
		if pos[i] <= pos[i-1] || h[i] < h[i-1] {
			return fmt.Errorf("quality: restore P² state: markers out of order")
		}
	}
	a.sk.Add(h[0])
	for i := 1; i < 5; i++ {
		a.sk.AddCount(h[i], int64(pos[i]-pos[i-1]))
	}
	return nil
}

// MinAccumulator keeps a bucket's lowest sample and the number of
// samples. Merging partial buckets is exact: the lowest of the lowest.
type MinAccumulator struct {
	min float64
	n   int64
}

var _ obs.Mergeable = (*MinAccumulator)(nil)

// Add folds one sample in; NaN, infinite and negative samples (a lost
// ping) are not RTTs and are skipped.
func (a *MinAccumulator) Add(o *obs.Observation) {
	if !(o.Value >= 0) || math.IsInf(o.Value, 1) {
		return
	}
	if a.n == 0 || o.Value < a.min {
		a.min = o.Value
	}
	a.n++
}

// Result returns the lowest sample and the number of samples; NaN for an
// empty bucket.
func (a *MinAccumulator) Result() (float64, int64) {
	if a.n == 0 {
		return math.NaN(), 0
	}
	return a.min, a.n
}

// Reset empties the accumulator for reuse.
func (a *MinAccumulator) Reset() { *a = MinAccumulator{} }

// Merge folds in the samples of other, a *MinAccumulator.
func (a *MinAccumulator) Merge(other obs.Accumulator) error {
	o, ok := other.(*MinAccumulator)
	if !ok {
		return fmt.Errorf("quality: merge %T into a minimum accumulator", other)
	}
	if o.n > 0 && (a.n == 0 || o.min < a.min) {
		a.min = o.min
	}
	a.n += o.n
	return nil
}

// The minimum's binary form: version byte 1, then the lowest sample
// (float64 bits) and the sample count (uint64), little endian.
const (
	minBinVersion = 1
	minBinSize    = 1 + 8 + 8
)

// MarshalBinary returns the accumulator's state for a checkpoint or a
// partial bucket.
func (a *MinAccumulator) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, minBinSize)
	b = append(b, minBinVersion)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.min))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.n))
	return b, nil
}

// UnmarshalBinary restores a state written by MarshalBinary.
func (a *MinAccumulator) UnmarshalBinary(b []byte) error {
	if len(b) != minBinSize || b[0] != minBinVersion {
		return fmt.Errorf("quality: restore minimum accumulator: bad state (%d bytes, version %d)", len(b), firstByte(b))
	}
	s := MinAccumulator{min: math.Float64frombits(binary.LittleEndian.Uint64(b[1:])), n: int64(binary.LittleEndian.Uint64(b[9:]))}
	if s.n < 0 || (s.n > 0 && !(s.min >= 0 && !math.IsInf(s.min, 1))) {
		return fmt.Errorf("quality: restore minimum accumulator: lowest %v of %d samples", s.min, s.n)
	}
	if s.n == 0 {
		s.min = 0
	}
	*a = s
	return nil
}

// LossAccumulator computes the packet-loss ratio of a bucket as
// sum(lost)/sum(sent). An observation with Hash > 0 stands for Hash packets
// sent of which Value×Hash were lost (rounded to whole packets, so that the
// ratio of integers is recovered exactly); one with Hash == 0 is a bare
// ratio counted as one packet, so that producers that know no packet counts
// still average sensibly.
//
// Lost packets are kept in fixed point (whole packets and 2⁻³² parts of
// one, a bare ratio rounded to that), not as a float64 sum: integer sums do
// not depend on the order of addition, so partial buckets merged in any
// order give exactly the ratio of one accumulator fed every measurement.
type LossAccumulator struct {
	lost int64  // whole packets lost
	frac uint64 // parts of a packet lost, in units of 2⁻³², below 2³²
	sent int64
}

var _ obs.Mergeable = (*LossAccumulator)(nil)

const lossOne = 1 << 32 // one packet in units of frac

// Add folds one measurement's loss into the bucket.
func (a *LossAccumulator) Add(o *obs.Observation) {
	if math.IsNaN(o.Value) || o.Value < 0 || o.Value > 1 {
		return
	}
	if o.Hash == 0 {
		a.addFrac(uint64(math.Round(o.Value * lossOne)))
		a.sent++
		return
	}
	n := int64(min(o.Hash, 1<<40))
	a.lost += int64(math.Round(o.Value * float64(n)))
	a.sent += n
}

func (a *LossAccumulator) addFrac(f uint64) {
	a.frac += f
	a.lost += int64(a.frac >> 32)
	a.frac &= lossOne - 1
}

// Result returns the loss ratio and the number of packets sent; NaN when no
// packet was sent.
func (a *LossAccumulator) Result() (float64, int64) {
	if a.sent == 0 {
		return math.NaN(), 0
	}
	return (float64(a.lost) + float64(a.frac)/lossOne) / float64(a.sent), a.sent
}

// Reset empties the accumulator for reuse.
func (a *LossAccumulator) Reset() { *a = LossAccumulator{} }

// Merge adds the packets of other, a *LossAccumulator.
func (a *LossAccumulator) Merge(other obs.Accumulator) error {
	o, ok := other.(*LossAccumulator)
	if !ok {
		return fmt.Errorf("quality: merge %T into a loss accumulator", other)
	}
	a.lost += o.lost
	a.addFrac(o.frac)
	a.sent += o.sent
	return nil
}

// Binary forms: version 2 is the version byte, whole packets lost (uint64),
// parts lost (uint32) and packets sent (uint64), little endian; version 1,
// which older checkpoints hold, had lost as a float64 and no parts.
const (
	lossBinVersion   = 2
	lossBinSize      = 1 + 8 + 4 + 8
	lossBinV1        = 1
	lossBinV1Size    = 1 + 8 + 8
	maxLossSentCount = 1 << 62
)

// MarshalBinary returns the accumulator's state for a checkpoint or a
// partial bucket.
func (a *LossAccumulator) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, lossBinSize)
	b = append(b, lossBinVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(a.lost))
	b = binary.LittleEndian.AppendUint32(b, uint32(a.frac))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.sent))
	return b, nil
}

// UnmarshalBinary restores a state written by MarshalBinary, of this
// version or the previous one.
func (a *LossAccumulator) UnmarshalBinary(b []byte) error {
	var s LossAccumulator
	switch {
	case len(b) == lossBinSize && b[0] == lossBinVersion:
		s.lost = int64(binary.LittleEndian.Uint64(b[1:]))
		s.frac = uint64(binary.LittleEndian.Uint32(b[9:]))
		s.sent = int64(binary.LittleEndian.Uint64(b[13:]))
	case len(b) == lossBinV1Size && b[0] == lossBinV1:
		lost := math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))
		s.sent = int64(binary.LittleEndian.Uint64(b[9:]))
		if !(lost >= 0 && lost <= maxLossSentCount) {
			return fmt.Errorf("quality: restore loss accumulator: %v lost", lost)
		}
		whole := math.Floor(lost)
		s.lost = int64(whole)
		s.addFrac(uint64(math.Round((lost - whole) * lossOne)))
	default:
		return fmt.Errorf("quality: restore loss accumulator: bad state (%d bytes, version %d)", len(b), firstByte(b))
	}
	if s.sent < 0 || s.sent > maxLossSentCount || s.lost < 0 || s.lost > s.sent || (s.lost == s.sent && s.frac > 0) {
		return fmt.Errorf("quality: restore loss accumulator: %d+%d/2³² lost of %d sent", s.lost, s.frac, s.sent)
	}
	*a = s
	return nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
