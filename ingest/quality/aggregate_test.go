package quality

import (
	qm "github.com/outagewatch/outagewatch/obs/quality"
	"math"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
)

// TestThroughAggregator runs measurements through the real aggregator,
// once straight and once with a checkpoint and restore half-way, and
// expects the same closed buckets: the accumulators must survive restarts.
func TestThroughAggregator(t *testing.T) {
	recs := benchMeasurements(2000) // 2000 × 10 ms: all inside one 5-minute bucket
	run := func(checkpointAt int) map[string]aggregate.Point {
		a := aggregate.New(aggregate.Config{})
		d := NewDecoder(nil)
		for i, r := range recs {
			if i == checkpointAt {
				b, err := a.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				a = aggregate.New(aggregate.Config{})
				if err := a.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Decode(r, a); err != nil {
				t.Fatal(err)
			}
		}
		out := map[string]aggregate.Point{}
		a.Advance(sampleTime+1e12, func(c *aggregate.Closed) {
			for _, p := range c.Points {
				if !p.Missing {
					out[p.Series.Key.String()] = p
				}
			}
		})
		return out
	}
	straight, restored := run(-1), run(1000)
	if len(straight) == 0 || len(straight) != len(restored) {
		t.Fatalf("%d series straight, %d restored", len(straight), len(restored))
	}
	var lossSeries int
	for k, p := range straight {
		q := restored[k]
		if p.Value != q.Value || p.Count != q.Count {
			t.Errorf("%s: straight %v (n=%d), restored %v (n=%d)", k, p.Value, p.Count, q.Value, q.Count)
		}
		if p.Series.Key.Signal == qm.PacketLoss {
			lossSeries++
			if p.Value < 0 || p.Value > 0.1 || p.Count%10 != 0 {
				t.Errorf("%s: loss %v over %d packets, want <= 0.1 over multiples of 10", k, p.Value, p.Count)
			}
		}
		if math.IsNaN(p.Value) {
			t.Errorf("%s: NaN", k)
		}
	}
	if lossSeries == 0 {
		t.Fatal("no packet-loss series closed")
	}
}
