package netmap

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"testing"
)

// naive is the reference: a linear scan for the longest containing prefix.
type naive map[netip.Prefix]int

func (m naive) lookup(a netip.Addr) (int, bool) {
	best, bv, found := -1, 0, false
	for p, v := range m {
		if p.Contains(a) && p.Bits() > best {
			best, bv, found = p.Bits(), v, true
		}
	}
	return bv, found
}

func randPrefix(r *rand.Rand, v6 bool) netip.Prefix {
	if v6 {
		var b [16]byte
		b[0] = 0x20
		b[1] = byte(r.IntN(4))
		for i := 2; i < 16; i++ {
			b[i] = byte(r.IntN(4)) // few distinct values so that prefixes nest
		}
		p, _ := netip.AddrFrom16(b).Prefix(r.IntN(129))
		return p
	}
	var b [4]byte
	for i := range b {
		b[i] = byte(r.IntN(3)) * 64
	}
	p, _ := netip.AddrFrom4(b).Prefix(r.IntN(33))
	return p
}

func randAddr(r *rand.Rand, v6 bool) netip.Addr {
	if v6 {
		var b [16]byte
		b[0] = 0x20
		for i := 1; i < 16; i++ {
			b[i] = byte(r.IntN(5))
		}
		return netip.AddrFrom16(b)
	}
	var b [4]byte
	for i := range b {
		b[i] = byte(r.IntN(3))*64 + byte(r.IntN(2))
	}
	return netip.AddrFrom4(b)
}

func TestTableMatchesLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, v6 := range []bool{false, true} {
		var tab Table[int]
		ref := naive{}
		for i := 0; i < 3000; i++ {
			p := randPrefix(r, v6)
			if r.IntN(4) == 0 {
				_, had := ref[p]
				if got := tab.Delete(p); got != had {
					t.Fatalf("Delete(%s) = %v, want %v", p, got, had)
				}
				delete(ref, p)
			} else {
				tab.Insert(p, i)
				ref[p] = i
			}
			if tab.Len() != len(ref) {
				t.Fatalf("Len = %d, want %d", tab.Len(), len(ref))
			}
		}
		for i := 0; i < 20000; i++ {
			a := randAddr(r, v6)
			gv, gok := tab.Lookup(a)
			wv, wok := ref.lookup(a)
			if gv != wv || gok != wok {
				t.Fatalf("v6=%v Lookup(%s) = %d,%v want %d,%v", v6, a, gv, gok, wv, wok)
			}
		}
		for p, v := range ref {
			if got, ok := tab.Get(p); !ok || got != v {
				t.Fatalf("Get(%s) = %d,%v want %d", p, got, ok, v)
			}
		}
		seen := 0
		tab.Walk(func(p netip.Prefix, v int) bool {
			if ref[p] != v {
				t.Fatalf("Walk gave %s=%d, want %d", p, v, ref[p])
			}
			seen++
			return true
		})
		if seen != len(ref) {
			t.Fatalf("Walk saw %d prefixes, want %d", seen, len(ref))
		}
		// Deleting everything must prune the trie back to its roots.
		for p := range ref {
			tab.Delete(p)
		}
		if tab.Len() != 0 {
			t.Fatalf("Len after deleting all = %d", tab.Len())
		}
		if n := tab.v4.nodes() + tab.v6.nodes(); n != 2 {
			t.Fatalf("%d nodes left after deleting all, want the 2 short roots", n)
		}
	}
}

func TestTableEdges(t *testing.T) {
	var tab Table[string]
	tab.Insert(netip.MustParsePrefix("0.0.0.0/0"), "default4")
	tab.Insert(netip.MustParsePrefix("10.0.0.0/8"), "ten")
	tab.Insert(netip.MustParsePrefix("10.1.2.3/32"), "host")
	tab.Insert(netip.MustParsePrefix("10.1.2.0/24"), "net")
	tab.Insert(netip.MustParsePrefix("10.1.2.0/25"), "half")
	tab.Insert(netip.MustParsePrefix("2001:db8::/32"), "doc")
	tab.Insert(netip.MustParsePrefix("2001:db8::1/128"), "host6")
	tab.Insert(netip.MustParsePrefix("10.1.2.77/24"), "net2") // masked: replaces "net"
	tab.Insert(netip.Prefix{}, "invalid")                     // ignored
	cases := map[string]string{
		"10.1.2.3":         "host",
		"10.1.2.4":         "half",
		"10.1.2.200":       "net2",
		"10.9.9.9":         "ten",
		"11.0.0.1":         "default4",
		"::ffff:10.1.2.3":  "host",
		"2001:db8::1":      "host6",
		"2001:db8::2":      "doc",
		"2001:db9::1":      "",
		"255.255.255.255":  "default4",
		"2001:db8:ffff::1": "doc",
	}
	for a, want := range cases {
		got, _ := tab.Lookup(netip.MustParseAddr(a))
		if got != want {
			t.Errorf("Lookup(%s) = %q, want %q", a, got, want)
		}
	}
	if _, ok := tab.Lookup(netip.Addr{}); ok {
		t.Error("Lookup(invalid) found a value")
	}
	if tab.Len() != 7 {
		t.Errorf("Len = %d, want 7", tab.Len())
	}
}

// synthetic builds a deterministic table shaped like today's global table:
// n prefixes, five in six IPv4 (mostly /24 and /22../16), one in six IPv6
// (mostly /48 and /32../44).
func synthetic(n int) []netip.Prefix {
	r := rand.New(rand.NewPCG(42, 42))
	out := make([]netip.Prefix, 0, n)
	seen := make(map[netip.Prefix]bool, n)
	for len(out) < n {
		var p netip.Prefix
		if r.IntN(6) != 0 {
			l := 24
			switch x := r.IntN(100); {
			case x < 10:
				l = 16 + r.IntN(6)
			case x < 40:
				l = 22 + r.IntN(2)
			}
			a := netip.AddrFrom4([4]byte{byte(1 + r.IntN(222)), byte(r.IntN(256)), byte(r.IntN(256)), 0})
			p, _ = a.Prefix(l)
		} else {
			l := 48
			switch x := r.IntN(100); {
			case x < 30:
				l = 29 + r.IntN(16)
			}
			var b [16]byte
			b[0], b[1] = 0x2a, byte(r.IntN(16))
			b[2], b[3], b[4], b[5] = byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))
			p, _ = netip.AddrFrom16(b).Prefix(l)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func BenchmarkLookup1M(b *testing.B) {
	prefixes := synthetic(1_000_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var tab Table[uint32]
	for i, p := range prefixes {
		tab.Insert(p, uint32(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	bytesPerPrefix := float64(after.HeapAlloc-before.HeapAlloc) / float64(tab.Len())
	for _, fam := range []string{"v4", "v6", "mixed"} {
		b.Run(fam, func(b *testing.B) {
			r := rand.New(rand.NewPCG(7, 7))
			addrs := make([]netip.Addr, 0, 1<<16)
			for len(addrs) < cap(addrs) {
				p := prefixes[r.IntN(len(prefixes))]
				if (fam == "v4" && !p.Addr().Is4()) || (fam == "v6" && p.Addr().Is4()) {
					continue
				}
				a := p.Addr().AsSlice()
				a[len(a)-1] |= byte(r.IntN(256))
				ad, _ := netip.AddrFromSlice(a)
				addrs = append(addrs, ad)
			}
			b.ReportAllocs()
			b.ResetTimer()
			found := 0
			for i := 0; i < b.N; i++ {
				if _, ok := tab.Lookup(addrs[i&(1<<16-1)]); ok {
					found++
				}
			}
			b.StopTimer()
			if found != b.N {
				b.Fatalf("%d of %d lookups missed", b.N-found, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
			b.ReportMetric(bytesPerPrefix, "bytes/prefix")
		})
	}
	runtime.KeepAlive(&tab)
}

func TestSupernetsSubnetsMatchLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, v6 := range []bool{false, true} {
		var tab Table[int]
		ref := naive{}
		for i := 0; i < 2000; i++ {
			p := randPrefix(r, v6)
			tab.Insert(p, i)
			ref[p] = i
		}
		for i := 0; i < 3000; i++ {
			q := randPrefix(r, v6)
			var wantSup, wantSub []netip.Prefix
			for p := range ref {
				if p.Bits() < q.Bits() && p.Contains(q.Addr()) {
					wantSup = append(wantSup, p)
				}
				if p.Bits() > q.Bits() && q.Contains(p.Addr()) {
					wantSub = append(wantSub, p)
				}
			}
			var gotSup, gotSub []netip.Prefix
			tab.Supernets(q, func(p netip.Prefix, v int) bool {
				if ref[p] != v {
					t.Fatalf("Supernets(%s) gave %s=%d, want %d", q, p, v, ref[p])
				}
				gotSup = append(gotSup, p)
				return true
			})
			tab.Subnets(q, func(p netip.Prefix, v int) bool {
				if ref[p] != v {
					t.Fatalf("Subnets(%s) gave %s=%d, want %d", q, p, v, ref[p])
				}
				gotSub = append(gotSub, p)
				return true
			})
			cmp := func(a, b netip.Prefix) int {
				if c := a.Addr().Compare(b.Addr()); c != 0 {
					return c
				}
				return a.Bits() - b.Bits()
			}
			for _, s := range [][]netip.Prefix{wantSup, wantSub, gotSup, gotSub} {
				slices.SortFunc(s, cmp)
			}
			if !slices.Equal(gotSup, wantSup) {
				t.Fatalf("Supernets(%s) = %v, want %v", q, gotSup, wantSup)
			}
			if !slices.Equal(gotSub, wantSub) {
				t.Fatalf("Subnets(%s) = %v, want %v", q, gotSub, wantSub)
			}
		}
	}
}
