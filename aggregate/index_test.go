package aggregate

import (
	"fmt"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

// The index finds every series it holds, by signal and entity both, and
// nothing else, across the growths of its table.
func TestIndexFindsWhatItHolds(t *testing.T) {
	var x index[*Series]
	if x.get(obs.TrafficBytes, "asn:1") != nil {
		t.Fatal("an empty index found a series")
	}
	var all []*Series
	for i := range 5000 {
		for _, sig := range []obs.Signal{obs.TrafficBytes, obs.TrafficPackets} {
			s := &Series{Key: Key{sig, fmt.Sprintf("asn:%d", i)}}
			x.put(s)
			all = append(all, s)
		}
	}
	if x.len() != 10000 {
		t.Fatalf("len %d, want 10000", x.len())
	}
	if len(x.slots) != 16384 {
		t.Errorf("%d slots for 10,000 series, want 16,384 (at most ¾ full)", len(x.slots))
	}
	for _, s := range all {
		if got := x.get(s.Signal, s.Entity); got != s {
			t.Fatalf("%s: found %v", s.Key, got)
		}
	}
	if x.get(obs.TrafficBytes, "asn:5000") != nil || x.get(mean, "asn:1") != nil {
		t.Error("found a series never put")
	}
}
