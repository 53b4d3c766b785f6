package obs_test

import (
	"testing"

	"github.com/outagewatch/outagewatch/obs"

	// Every package that registers signals, so that their Custom
	// accumulators are checked here.
	_ "github.com/outagewatch/outagewatch/bgp"
	_ "github.com/outagewatch/outagewatch/ingest/bgp"
	_ "github.com/outagewatch/outagewatch/ingest/dcload"
	_ "github.com/outagewatch/outagewatch/ingest/dns"
	_ "github.com/outagewatch/outagewatch/ingest/flows"
	_ "github.com/outagewatch/outagewatch/obs/quality"
)

// A scaled-out first stage sends partial buckets of every signal, so every
// Custom accumulator must be Mergeable; the built-in aggregations (sum,
// last, mean, max) merge in the aggregator itself. Each accumulator's own
// package shows that its merge is exact.
func TestCustomAccumulatorsAreMergeable(t *testing.T) {
	var custom int
	for _, name := range obs.Names() {
		s, _ := obs.Lookup(name)
		d := s.Def()
		if d.Agg != obs.Custom {
			continue
		}
		custom++
		acc := d.NewAccumulator()
		m, ok := acc.(obs.Mergeable)
		if !ok {
			t.Errorf("%s: accumulator %T is not obs.Mergeable", name, acc)
			continue
		}
		if err := m.Merge(d.NewAccumulator()); err != nil {
			t.Errorf("%s: merging an empty accumulator: %v", name, err)
		}
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := d.NewAccumulator().(obs.Mergeable).UnmarshalBinary(b); err != nil {
			t.Errorf("%s: empty state refused: %v", name, err)
		}
	}
	// latency_p50, latency_p95, latency_min, bandwidth_p50, packet_loss,
	// dns_clients.
	if custom != 6 {
		t.Errorf("%d custom signals registered, want 6", custom)
	}
}
