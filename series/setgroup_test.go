package series

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A code written in place must leave exactly the word (and spill area)
// that decoding the group, changing the day and encoding it again leaves,
// for every kind of group: no value, values narrow and wide, spilled, the
// day replaced the lowest or not, the new code missing, zero, under, at,
// inside and past the lowest's reach. It must also take the fast way for
// the ordinary write, or it saves nothing.
func TestSetGroupCodeMatchesStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fast, writes := 0, 0
	for range 20000 {
		a, b := New(4032, min5), New(4032, min5)
		var cs [maxGroupDays]uint8
		lo := uint8(codeMin + rng.IntN(100))
		spread := rng.IntN(maxSpread + 4)
		for d := range a.days {
			switch rng.IntN(8) {
			case 0:
				cs[d] = codeMissing
			case 1:
				cs[d] = 1 // zero
			default:
				cs[d] = lo + uint8(rng.IntN(spread+1))
			}
		}
		if rng.IntN(10) == 0 {
			cs = [maxGroupDays]uint8{}
		}
		g := int32(rng.IntN(int(a.perDay)))
		a.storeGroup(g, &cs)
		b.storeGroup(g, &cs)
		for range 4 {
			d := int32(rng.IntN(int(a.days)))
			var c uint8
			switch rng.IntN(6) {
			case 0:
				c = codeMissing
			case 1:
				c = 1
			default:
				c = uint8(max(codeMin, int(lo)+rng.IntN(maxSpread+8)-4))
			}
			writes++
			if a.setGroupCode(g, d, c) {
				fast++
			} else {
				a.loadGroup(g, &cs)
				cs[d] = c
				a.storeGroup(g, &cs)
			}
			b.loadGroup(g, &cs)
			cs[d] = c
			b.storeGroup(g, &cs)
			if a.word(g) != b.word(g) || a.Spilled() != b.Spilled() {
				t.Fatalf("day %d := %d: word %#x, stored %#x (spilled %d, %d)", d, c, a.word(g), b.word(g), a.Spilled(), b.Spilled())
			}
			if a.spill != nil && string(a.spill.codes) != string(b.spill.codes) {
				t.Fatalf("day %d := %d: spill areas differ", d, c)
			}
		}
	}
	if fast < writes/2 {
		t.Errorf("%d of %d writes in place", fast, writes)
	}
}

// BenchmarkRingPutDaily writes two weeks and more of an ordinary daily
// curve (±3 % noise) into a grouped ring: the writes setGroupCode serves.
func BenchmarkRingPutDaily(b *testing.B) {
	r := New(4032, min5)
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 288*7)
	for i := range vals {
		vals[i] = 1e9 * (1.4 + math.Sin(2*math.Pi*float64(i%288)/288)) * (1 + 0.03*rng.NormFloat64())
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Put(int64(i+1)*min5, vals[i%len(vals)])
		i++
	}
	if r.Spilled() != 0 || !r.grouped {
		b.Fatalf("%d groups spilled, grouped %v", r.Spilled(), r.grouped)
	}
}
