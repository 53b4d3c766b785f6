package memlimit

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in    string
		bytes uint64
		pct   float64
		err   string
	}{
		{in: ""},
		{in: "off"},
		{in: "6GiB", bytes: 6 << 30},
		{in: "6 GB", bytes: 6e9},
		{in: "512MiB", bytes: 512 << 20},
		{in: "1073741824", bytes: 1 << 30},
		{in: "75%", pct: 75},
		{in: " 12.5 % ", pct: 12.5},
		{in: "0%", err: "a share must be over 0"},
		{in: "150%", err: "at most 100"},
		{in: "lots", err: "want a size such as 6GiB"},
		{in: "0", err: "out of range"},
		{in: "-1GiB", err: "want a size"},
	}
	for _, c := range cases {
		l, err := Parse(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error with %q", c.in, l, err, c.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case l.Bytes != c.bytes || l.Percent != c.pct:
			t.Errorf("Parse(%q) = %+v, want %d bytes, %g %%", c.in, l, c.bytes, c.pct)
		}
	}
}

func TestResolve(t *testing.T) {
	if got := (Limit{Percent: 75}).Resolve(8 << 30); got != 6<<30 {
		t.Fatalf("75 %% of 8 GiB = %d, want %d", got, 6<<30)
	}
	if got := (Limit{Bytes: 5 << 20}).Resolve(8 << 30); got != 5<<20 {
		t.Fatalf("5 MiB resolved to %d", got)
	}
}

func TestApply(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	n, err := Apply(Limit{Bytes: 3 << 30})
	if err != nil || n != 3<<30 || debug.SetMemoryLimit(-1) != 3<<30 {
		t.Fatalf("Apply(3 GiB) = %d, %v; runtime limit %d", n, err, debug.SetMemoryLimit(-1))
	}
	if n, err := Apply(Limit{}); err != nil || n != 3<<30 {
		t.Fatalf("Apply(none) = %d, %v; want the limit left at 3 GiB", n, err)
	}
}

// A share is taken of what Available reports: the cgroup's limit where
// the process has one, else the machine's memory, which is never zero.
func TestApplyShare(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	avail, err := Available()
	if err != nil || avail == 0 {
		t.Fatalf("Available() = %d, %v", avail, err)
	}
	n, err := Apply(Limit{Percent: 50})
	if want := int64(float64(avail) / 2); err != nil || n != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("Apply(50%%) = %d, %v; want %d of %d", n, err, want, avail)
	}
}
