// Package quality decodes Internet-quality measurements (round-trip times,
// packet loss, bandwidth) from probes into observations: outagewatch's own
// JSON measurement (Decoder) and RIPE Atlas ping results (AtlasDecoder).
//
// Latency and bandwidth are bucketed as percentiles rather than means because
// an outage shows as a shift of the typical value (the Iberian blackout moved
// median RTT from 22 ms to 40 ms), which a handful of retransmitted packets
// with second-long RTTs would swamp in a mean. Each RTT sample is one
// observation, fed to a P² estimator per open bucket (package quantile), so
// the cost of a bucket does not grow with the number of probes.
//
// Entities of a measurement:
//
//   - the source side: "asn:N" of the probe's network (src_asn, or the origin
//     AS of the probe's public address from netmap) and "country:CC"
//     (country, or netmap's country of that AS);
//   - the transit the probe's traffic left the site through,
//     obs.Transit(transit_asn, site) = "transit:1299@lis01", when named;
//   - for packet loss through a transit, one entity per destination under
//     that transit (see PathEntity), so that the packet-loss detector can
//     tell loss on one destination from loss on many.
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

// QuantileAccumulator folds a bucket's samples into one quantile estimate.
// It is a thin obs.Accumulator over quantile.P2; like P2 it neither grows nor
// allocates as samples arrive.
type QuantileAccumulator struct {
	est quantile.P2
}

// NewQuantileAccumulator returns an accumulator of quantile q, in (0, 1).
func NewQuantileAccumulator(q float64) *QuantileAccumulator {
	return &QuantileAccumulator{est: *quantile.New(q)}
}

// Add adds o.Value as one sample.
func (a *QuantileAccumulator) Add(o *obs.Observation) { a.est.Add(o.Value) }

// Result returns the estimate and the number of samples behind it; NaN for
// an empty bucket.
func (a *QuantileAccumulator) Result() (float64, int64) {
	return a.est.Quantile(), int64(a.est.Count())
}

// Reset empties the accumulator for reuse.
func (a *QuantileAccumulator) Reset() { a.est.Reset() }

// MarshalBinary returns the estimator's state for a checkpoint.
func (a *QuantileAccumulator) MarshalBinary() ([]byte, error) { return a.est.MarshalBinary() }

// UnmarshalBinary restores a state written by MarshalBinary. A state for a
// different quantile is refused: the aggregator restores into accumulators
// made for the signal, and a mismatch means the checkpoint is not this
// signal's.
func (a *QuantileAccumulator) UnmarshalBinary(b []byte) error {
	var e quantile.P2
	if err := e.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("quality: restore quantile accumulator: %w", err)
	}
	if a.est.Q() != 0 && e.Q() != a.est.Q() {
		return fmt.Errorf("quality: restore quantile accumulator: state is for q=%v, accumulator is q=%v", e.Q(), a.est.Q())
	}
	a.est = e
	return nil
}

// LossAccumulator computes the packet-loss ratio of a bucket as
// sum(lost)/sum(sent). An observation with Hash > 0 stands for Hash packets
// sent of which Value×Hash were lost (rounded to whole packets, so that the
// ratio of integers is recovered exactly); one with Hash == 0 is a bare
// ratio counted as one packet, so that producers that know no packet counts
// still average sensibly.
type LossAccumulator struct {
	lost float64
	sent int64
}

// Add folds one measurement's loss into the bucket.
func (a *LossAccumulator) Add(o *obs.Observation) {
	if math.IsNaN(o.Value) || o.Value < 0 || o.Value > 1 {
		return
	}
	if o.Hash == 0 {
		a.lost += o.Value
		a.sent++
		return
	}
	n := int64(min(o.Hash, 1<<40))
	a.lost += math.Round(o.Value * float64(n))
	a.sent += n
}

// Result returns the loss ratio and the number of packets sent; NaN when no
// packet was sent.
func (a *LossAccumulator) Result() (float64, int64) {
	if a.sent == 0 {
		return math.NaN(), 0
	}
	return a.lost / float64(a.sent), a.sent
}

// Reset empties the accumulator for reuse.
func (a *LossAccumulator) Reset() { *a = LossAccumulator{} }

const lossBinVersion = 1

// MarshalBinary returns the accumulator's state for a checkpoint.
func (a *LossAccumulator) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 17)
	b = append(b, lossBinVersion)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.lost))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.sent))
	return b, nil
}

// UnmarshalBinary restores a state written by MarshalBinary.
func (a *LossAccumulator) UnmarshalBinary(b []byte) error {
	if len(b) != 17 || b[0] != lossBinVersion {
		return fmt.Errorf("quality: restore loss accumulator: bad state (%d bytes)", len(b))
	}
	lost := math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))
	sent := int64(binary.LittleEndian.Uint64(b[9:]))
	if sent < 0 || !(lost >= 0 && lost <= float64(sent)) {
		return fmt.Errorf("quality: restore loss accumulator: %v lost of %d sent", lost, sent)
	}
	a.lost, a.sent = lost, sent
	return nil
}
