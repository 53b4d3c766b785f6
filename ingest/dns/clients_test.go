package dnsin

import (
	"math"
	"net/netip"
	"testing"

	"github.com/axiomhq/hyperloglog"

	"github.com/outagewatch/outagewatch/obs"
)

// clientAddr returns the i-th of a set of distinct addresses, half IPv4 and
// half IPv6.
func clientAddr(i int) netip.Addr {
	if i%2 == 0 {
		return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	}
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 12: byte(i >> 24), 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)})
}

func addClients(a *ClientsAccumulator, from, to, repeat int) {
	var o obs.Observation
	o.Signal, o.Value = Clients, 1
	for r := 0; r < repeat; r++ {
		for i := from; i < to; i++ {
			o.Hash = ClientHash(clientAddr(i), 0)
			a.Add(&o)
		}
	}
}

func within(t *testing.T, what string, got float64, exact int, tol float64) {
	t.Helper()
	if e := math.Abs(got-float64(exact)) / float64(exact); e > tol {
		t.Errorf("%s: estimate %.0f, exact %d, error %.2f%%", what, got, exact, 100*e)
	} else {
		t.Logf("%s: estimate %.0f, exact %d, error %.2f%%", what, got, exact, 100*e)
	}
}

func TestClientsEstimate(t *testing.T) {
	a := NewClientsAccumulator()
	addClients(a, 0, 100_000, 2)
	v, n := a.Result()
	if n != 200_000 {
		t.Errorf("count %d, want 200000", n)
	}
	within(t, "100k clients", v, 100_000, 0.02)

	a.Reset()
	if v, n := a.Result(); v != 0 || n != 0 || a.sk != nil {
		t.Errorf("after Reset: %v %d, sketch kept: %v", v, n, a.sk != nil)
	}
	addClients(a, 0, 50, 3)
	if v, _ := a.Result(); v != 50 {
		t.Errorf("50 clients estimated as %v", v)
	}
}

func TestClientsMergeAndMarshal(t *testing.T) {
	// Two partitions with overlapping clients: 0..60k and 40k..100k.
	a, b := NewClientsAccumulator(), NewClientsAccumulator()
	addClients(a, 0, 60_000, 1)
	addClients(b, 40_000, 100_000, 1)

	// b travels as bytes, as a partial bucket or checkpoint would.
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var b2 ClientsAccumulator
	if err := b2.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	bv, bn := b.Result()
	b2v, b2n := b2.Result()
	if bv != b2v || bn != b2n {
		t.Errorf("round trip: %v/%d, want %v/%d", b2v, b2n, bv, bn)
	}
	if err := a.Merge(&b2); err != nil {
		t.Fatal(err)
	}
	v, n := a.Result()
	if n != 120_000 {
		t.Errorf("count %d, want 120000", n)
	}
	within(t, "union of 60k and 60k with 20k common", v, 100_000, 0.02)

	// Merging into an empty accumulator, and an empty one into a full one.
	var c ClientsAccumulator
	if err := c.Merge(a); err != nil {
		t.Fatal(err)
	}
	if cv, _ := c.Result(); cv != v {
		t.Errorf("merge into empty: %v, want %v", cv, v)
	}
	if err := c.Merge(NewClientsAccumulator()); err != nil {
		t.Fatal(err)
	}
	// An empty accumulator marshals without a sketch and comes back empty.
	data, _ = NewClientsAccumulator().MarshalBinary()
	if err := c.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if v, n := c.Result(); v != 0 || n != 0 {
		t.Errorf("empty round trip %v %d", v, n)
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 5, 9, 9}} {
		if err := c.UnmarshalBinary(bad); err == nil {
			t.Errorf("UnmarshalBinary(%v) accepted", bad)
		}
	}
	// A sketch of another precision does not merge.
	other := &ClientsAccumulator{sk: hyperloglog.New16(), n: 1}
	other.sk.InsertHash(1)
	if err := a.Merge(other); err == nil {
		t.Error("merged precision 16 into 14")
	}
}

// The hash is the one hyperloglog's Insert uses on the 16-byte address, and
// the IPv4 and mapped forms of one client are one client.
func TestClientHash(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	if ClientHash(a, 0) != ClientHash(netip.MustParseAddr("::ffff:192.0.2.1"), 0) {
		t.Error("mapped address hashes differently")
	}
	if ClientHash(a, 0) == ClientHash(a, 99) {
		t.Error("seed ignored")
	}
	s1, s2 := hyperloglog.New14(), hyperloglog.New14()
	for i := range 1000 {
		c := clientAddr(i)
		b := c.As16()
		s1.Insert(b[:])
		s2.InsertHash(ClientHash(c, 0))
	}
	if s1.Estimate() != s2.Estimate() {
		t.Errorf("Insert %d, InsertHash %d", s1.Estimate(), s2.Estimate())
	}
	if Clients.Def().NewAccumulator == nil || Clients.Def().Agg != obs.Custom || Queries.Def().Agg != obs.Sum ||
		!Queries.Def().ZeroWhenAbsent || FailureRatio.Def().Agg != obs.Mean || FailureRatio.Def().Feed != obs.FeedDNS {
		t.Error("signal definitions")
	}
	for _, name := range []string{"dns_queries", "dns_clients", "dns_failure_ratio"} {
		if _, ok := obs.Lookup(name); !ok {
			t.Errorf("%s not registered", name)
		}
	}
}

func FuzzClientsUnmarshal(f *testing.F) {
	a := NewClientsAccumulator()
	addClients(a, 0, 100, 1)
	b, _ := a.MarshalBinary()
	f.Add(b)
	addClients(a, 0, 20000, 1)
	b, _ = a.MarshalBinary()
	f.Add(b)
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var c ClientsAccumulator
		if c.UnmarshalBinary(data) == nil {
			c.Result()
			c.Merge(a)
		}
	})
}

// Clients split over N accumulators (N input partitions), sent as bytes and
// merged in any order, give exactly the estimate of one accumulator that saw
// every query: HyperLogLog registers merge by maximum, which loses nothing,
// whether the sketches are still sparse or already dense.
func TestClientsSplitAndMergeIsExact(t *testing.T) {
	for _, clients := range []int{1, 40, 3000, 16_000, 16_500, 17_000, 20_000, 150_000} {
		one := NewClientsAccumulator()
		addClients(one, 0, clients, 2)
		want, wantN := one.Result()
		for _, n := range []int{2, 3, 8} {
			parts := make([]*ClientsAccumulator, n)
			for i := range parts {
				parts[i] = NewClientsAccumulator()
			}
			var o obs.Observation
			o.Signal, o.Value = Clients, 1
			for r := range 2 {
				for i := range clients {
					o.Hash = ClientHash(clientAddr(i), 0)
					parts[(i*31+r)%n].Add(&o)
				}
			}
			merged := Clients.Def().NewAccumulator().(obs.Mergeable)
			for i := n - 1; i >= 0; i-- {
				b, err := parts[i].MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				back := Clients.Def().NewAccumulator().(obs.Mergeable)
				if err := back.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				if err := merged.Merge(back); err != nil {
					t.Fatal(err)
				}
			}
			if got, gotN := merged.Result(); got != want || gotN != wantN {
				t.Errorf("%d clients in %d parts: %v (n=%d), one accumulator %v (n=%d)", clients, n, got, gotN, want, wantN)
			}
		}
		t.Logf("%d clients: estimate %v", clients, want)
	}
	if err := NewClientsAccumulator().Merge(struct{ obs.Accumulator }{}); err == nil {
		t.Error("merged a foreign accumulator")
	}
}
