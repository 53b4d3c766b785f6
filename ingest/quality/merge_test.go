package quality

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
	qm "github.com/outagewatch/outagewatch/obs/quality"
)

// mergeStreams are the observations of every quality series that decoded
// measurements feed: synthetic ones from benchMeasurements (varied RTTs,
// loss with packet counts), the real Atlas results in testdata, and bare
// loss ratios with no packet counts, which only the fixed-point sum keeps
// exact.
func mergeStreams(t *testing.T) map[accKey][]obs.Observation {
	t.Helper()
	var all obs.Slice
	d := NewDecoder(nil)
	r := rand.New(rand.NewPCG(3, 5))
	for _, rec := range benchMeasurements(3000) {
		var m Measurement
		if err := d.Parse(rec, &m); err != nil {
			t.Fatal(err)
		}
		m.BandwidthMbps, m.HasBandwidth = math.Round(100*r.ExpFloat64()*1000)/1000, true
		if err := d.Decode(AppendJSON(nil, &m), &all); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile("testdata/ping-results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ad := NewAtlasDecoder(nil)
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if err := ad.Decode(line, &all); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 {
		all = append(all, obs.Observation{Signal: qm.PacketLoss, Entity: "asn:64999", Value: r.Float64()})
	}
	out := map[accKey][]obs.Observation{}
	for _, o := range all {
		if o.Signal.Def().Agg != obs.Custom {
			continue
		}
		k := accKey{o.Signal, o.Entity}
		out[k] = append(out[k], o)
	}
	return out
}

// A bucket's observations split over N accumulators (as N input partitions
// of the first stage would see them), each sent as bytes and merged,
// give exactly the value and count of one accumulator fed them all: the
// quantile sketch and the fixed-point loss sum merge without loss.
func TestSplitAndMergeIsExact(t *testing.T) {
	streams := mergeStreams(t)
	seen := map[obs.Signal]int{}
	for k, os := range streams {
		def := k.sig.Def()
		one := def.NewAccumulator()
		for i := range os {
			one.Add(&os[i])
		}
		want, wantN := one.Result()
		for _, n := range []int{2, 3, 7} {
			parts := make([]obs.Accumulator, n)
			for i := range parts {
				parts[i] = def.NewAccumulator()
			}
			for i := range os {
				parts[(i*7919)%n].Add(&os[i])
			}
			merged := def.NewAccumulator().(obs.Mergeable)
			for i := n - 1; i >= 0; i-- {
				b, err := parts[i].(obs.Mergeable).MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				back := def.NewAccumulator().(obs.Mergeable)
				if err := back.UnmarshalBinary(b); err != nil {
					t.Fatalf("%v %s: %v", def.Name, k.ent, err)
				}
				if err := merged.Merge(back); err != nil {
					t.Fatalf("%v %s: %v", def.Name, k.ent, err)
				}
			}
			got, gotN := merged.Result()
			if got != want || gotN != wantN {
				t.Errorf("%s %s in %d parts: %v (n=%d), one accumulator %v (n=%d)", def.Name, k.ent, n, got, gotN, want, wantN)
			}
		}
		seen[k.sig]++
	}
	for _, s := range []obs.Signal{qm.LatencyP50, qm.LatencyP95, qm.BandwidthP50, qm.PacketLoss} {
		if seen[s] == 0 {
			t.Errorf("no series of %s to split", s.Def().Name)
		}
	}
	t.Logf("series split and merged: %v", seen)
}
