package rib

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

// loadSynthetic fills a table through Apply: peers × n prefixes, prefix i an
// IPv4 /24 (even i) or IPv6 /48 (odd i) with origin 64512+i%origins.
func loadSynthetic(tab *Table, peers, n, origins int) {
	u := &Update{Announced: make([]netip.Prefix, 1)}
	for p := 0; p < peers; p++ {
		id := tab.Peer(PeerKey{Collector: "rrc00", Addr: netip.AddrFrom4([4]byte{198, 51, 100, byte(p + 1)}), AS: uint32(65000 + p)})
		for i := 0; i < n; i++ {
			origin := uint32(64512 + i%origins)
			if i%2 == 0 {
				u.Announced[0] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10 + byte(i>>17), byte(i >> 9), byte(i >> 1), 0}), 24)
			} else {
				u.Announced[0] = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x2a, 0x0b, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}), 48)
			}
			*u = Update{Peer: id, Time: 1, Path: append(u.Path[:0], uint32(65000+p), 3356, origin), Origin: origin, Announced: u.Announced}
			tab.Apply(u, nil)
		}
	}
	tab.Refresh()
}

// BenchmarkTableMemory measures the heap per (peer, prefix) route of a
// table holding 20 peers × 50,000 prefixes, everything included (interned
// prefixes and paths, visibility state, the visible LPM).
func BenchmarkTableMemory(b *testing.B) {
	const peers, n = 20, 50_000
	var perRoute float64
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tab := New(Config{})
		loadSynthetic(tab, peers, n, 5000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perRoute = float64(after.HeapAlloc-before.HeapAlloc) / float64(peers*n)
		runtime.KeepAlive(tab)
	}
	b.ReportMetric(float64(b.N*peers*n)/b.Elapsed().Seconds(), "routes/s")
	b.ReportMetric(perRoute, "bytes/route")
}

// BenchmarkEmitSpace is the per-bucket cost with 5,000 origins.
func BenchmarkEmitSpace(b *testing.B) {
	tab := New(Config{})
	loadSynthetic(tab, 4, 50_000, 5000)
	n := 0
	sink := sinkFunc(func() { n++ })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tab.EmitSpace(int64(i), sink)
	}
	if n != b.N*5000 {
		b.Fatalf("%d gauges, want %d", n, b.N*5000)
	}
}

type sinkFunc func()

func (f sinkFunc) Observe(*obs.Observation) { f() }
