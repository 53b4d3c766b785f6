package series

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// plainRing is a ring of the same size as New(n, width) would give, held
// packed in slot order: the reference the grouped layout must match code
// for code.
func plainRing(n int, width int64) *Ring {
	r := &Ring{}
	storage := make([]byte, Default.StorageBytes(n))
	r.Init(Default, storage, n, width)
	r.codes, r.perDay, r.days, r.grouped = storage, r.n, 1, false
	return r
}

// Two weeks of the default format group their days; every read, the
// revision, the checkpoint and a restore give what the packed ring gives,
// through ordinary days, gaps, zeros, an outage, overwrites, rebases and
// the outage leaving the ring.
func TestGroupedMatchesPacked(t *testing.T) {
	const n = 4032
	g := New(n, min5)
	p := plainRing(n, min5)
	if !g.grouped || g.days != 14 || len(g.codes) != 2304 {
		t.Fatalf("layout: grouped %v, %d days, %d bytes; want grouped, 14 days, 2304 bytes", g.grouped, g.days, len(g.codes))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	t0 := int64(1700006400e9)
	level := 1e9
	maxSpilled := 0
	for b := range 40 * 288 {
		ts := t0 + int64(b)*min5
		day := b / 288
		tod := float64(b%288) / 288
		v := level * (1 + 0.4*math.Sin(2*math.Pi*tod)) * math.Exp(0.03*rng.NormFloat64())
		switch {
		case day == 9 && b%288 > 100 && b%288 < 200: // an outage
			v *= 0.02
		case day == 10 && b%288 < 20:
			v = 0
		case day == 12 && b%288 == 50:
			level *= 3 // a step up, past the headroom: a rebase
		case rng.IntN(60) == 0:
			v = math.NaN()
		}
		if rng.IntN(100) == 0 {
			continue // a gap: missing buckets
		}
		g.Put(ts, v)
		p.Put(ts, v)
		if b%53 == 0 { // an outlier replaced by a prediction
			g.Put(ts-2*min5, level)
			p.Put(ts-2*min5, level)
		}
		if g.Rev() != p.Rev() {
			t.Fatalf("bucket %d: rev %d, packed %d", b, g.Rev(), p.Rev())
		}
		maxSpilled = max(maxSpilled, g.Spilled())
		if b%97 == 0 || b == 40*288-1 {
			for x := ts - (n+2)*min5; x <= ts; x += min5 {
				if a, c := g.Code(x), p.Code(x); a != c {
					t.Fatalf("bucket %d, at %d: code %d, packed %d", b, (ts-x)/min5, a, c)
				}
			}
		}
	}
	if maxSpilled == 0 {
		t.Fatal("the outage spilled no group: the spill path went untested")
	}
	// What stays spilled is exactly the groups whose days spread wider
	// than a word holds now that the outage has left the ring.
	wide := 0
	for tod := range int64(288) {
		lo, hi := uint16(0xff), uint16(0)
		for d := range int64(14) {
			if c := p.Code(g.Last() - tod*min5 - d*dayNs); c >= codeMin {
				lo, hi = min(lo, c), max(hi, c)
			}
		}
		if hi >= codeMin && hi-lo > maxSpread {
			wide++
		}
	}
	if s := g.Spilled(); s != wide || s >= maxSpilled {
		t.Fatalf("%d groups spilled at the end, %d at most; want the %d that spread wider than a word, fewer than during the outage", s, maxSpilled, wide)
	}
	gb, _ := g.MarshalBinary()
	pb, _ := p.MarshalBinary()
	if string(gb) != string(pb) {
		t.Fatal("checkpoints differ between layouts")
	}
	var back Ring
	if err := back.UnmarshalBinary(pb); err != nil {
		t.Fatal(err)
	}
	if !back.grouped {
		t.Fatal("restored ring not grouped")
	}
	for x := g.Oldest(); x <= g.Last(); x += min5 {
		if a, c := g.Code(x), back.Code(x); a != c {
			t.Fatalf("restored code %d at %d, want %d", c, x, a)
		}
	}
}

// A group spills when its days spread wider than a word holds, reads back
// exactly while spilled, and returns to a word, its slot reused, when the
// wide day is overwritten.
func TestGroupSpillAndReturn(t *testing.T) {
	r := New(4032, min5)
	t0 := int64(1700006400e9)
	for d := range int64(14) {
		r.Put(t0+d*dayNs, 1000)
	}
	if r.Spilled() != 0 {
		t.Fatalf("%d spilled, want 0", r.Spilled())
	}
	want, _ := r.Get(t0)
	r.Put(t0+14*dayNs, 1000*math.Pow(Step, maxSpread)) // widest that fits
	if r.Spilled() != 0 {
		t.Fatalf("spread %d spilled", maxSpread)
	}
	r.Put(t0+14*dayNs, 1000*math.Pow(Step, maxSpread+1))
	if r.Spilled() != 1 {
		t.Fatalf("spread %d: %d spilled, want 1", maxSpread+1, r.Spilled())
	}
	if got, _ := r.Get(t0 + dayNs); got != want {
		t.Fatalf("a day beside the spilled one reads %v, want %v", got, want)
	}
	if got, _ := r.Get(t0 + 14*dayNs); math.Abs(got/(1000*math.Pow(Step, maxSpread+1))-1) > 0.02 {
		t.Fatalf("the wide day reads %v", got)
	}
	r.Put(t0+14*dayNs, 1000)
	if r.Spilled() != 0 || len(r.spill.free) != 1 {
		t.Fatalf("after the overwrite: %d spilled, %d free slots; want 0, 1", r.Spilled(), len(r.spill.free))
	}
	r.Put(t0+14*dayNs, 1e-9) // far under: clamped to the bottom, spills into the freed slot
	if r.Spilled() != 1 || len(r.spill.codes) != 14 {
		t.Fatalf("%d spilled in %d bytes, want 1 in 14", r.Spilled(), len(r.spill.codes))
	}
}

const dayNs = int64(86400e9)

// A series whose days spread too widely for grouping to pay (±25 % noise
// from day to day) gives grouping up, and then costs what a packed ring
// costs, not the grouped words and every group spilled; every code, the
// checkpoint and a restore stay the packed ring's.
func TestNoisyRingGivesUpGrouping(t *testing.T) {
	const n = 4032
	g := New(n, min5)
	p := plainRing(n, min5)
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := int64(1700006400e9)
	given := -1
	for b := range 20 * 288 {
		ts := t0 + int64(b)*min5
		sd := 0.03
		if b > 15*288 {
			sd = 0.25
		}
		v := 1e6 * math.Exp(sd*rng.NormFloat64())
		g.Put(ts, v)
		p.Put(ts, v)
		if given < 0 && g.Spilled() < 0 {
			given = b
		}
		if b%89 == 0 || b == 20*288-1 {
			for x := ts - n*min5; x <= ts; x += min5 {
				if a, c := g.Code(x), p.Code(x); a != c {
					t.Fatalf("bucket %d, at %d: code %d, packed %d", b, (ts-x)/min5, a, c)
				}
			}
		}
	}
	if given < 15*288 {
		t.Fatalf("grouping given up at bucket %d, want it kept through the quiet days (to %d)", given, 15*288)
	}
	if g.grouped || g.Spilled() != -1 {
		t.Fatal("a ring spilling most groups still groups")
	}
	if got, packed := g.Bytes()-int(unsafe.Sizeof(*g)), Default.StorageBytes(n); got > packed+160 {
		t.Fatalf("the noisy ring holds %d bytes, the packed layout %d", got, packed)
	}
	gb, _ := g.MarshalBinary()
	pb, _ := p.MarshalBinary()
	if string(gb) != string(pb) {
		t.Fatal("checkpoints differ between layouts")
	}
	var back Ring
	if err := back.UnmarshalBinary(gb); err != nil {
		t.Fatal(err)
	}
	if back.grouped || back.Spilled() != -1 {
		t.Fatal("the restored noisy ring groups")
	}
	for x := g.Oldest(); x <= g.Last(); x += min5 {
		if a, c := g.Code(x), back.Code(x); a != c {
			t.Fatalf("restored code %d at %d, want %d", c, x, a)
		}
	}
	// A rebase of the packed ring still shifts every code.
	g.Put(g.Last()+min5, 1e6*math.Pow(Step, 80))
	p.Put(p.Last()+min5, 1e6*math.Pow(Step, 80))
	for x := g.Oldest(); x <= g.Last(); x += min5 {
		if a, c := g.Code(x), p.Code(x); a != c {
			t.Fatalf("after a rebase: code %d at %d, packed %d", a, x, c)
		}
	}
}

func TestGroupedLayoutChoice(t *testing.T) {
	cases := []struct {
		f       *Format
		n       int
		width   int64
		grouped bool
		bytes   int
	}{
		{Default, 4032, min5, true, 2304},             // two weeks of 5 minutes
		{Default, 2880, min5, true, 2304},             // ten days
		{Default, 2592, min5, false, 2270},            // nine days: the packed codes are smaller
		{FormatFor(0.001), 4032, min5, false, 6050},   // twelve bits leave no room for fourteen days
		{Default, 4032, 30 * 60e9, false, 3530},       // 84 days of 30 minutes
		{Default, 4031, min5, false, 3530},            // not whole days
		{Default, 2 * 4032, int64(150e9), true, 4608}, // two weeks of 2.5 minutes
	}
	for _, c := range cases {
		r := NewFormat(c.f, c.n, c.width)
		if r.grouped != c.grouped || len(r.codes) != c.bytes || c.f.RingBytes(c.n, c.width) != c.bytes {
			t.Errorf("%d bits × %d of %ds: grouped %v in %d bytes, want %v in %d", c.f.Bits(), c.n, c.width/1e9, r.grouped, len(r.codes), c.grouped, c.bytes)
		}
	}
}
