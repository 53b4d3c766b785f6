package timeparse

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// syntaxes are the combinations the feeds use, and all of them at once.
var syntaxes = []Syntax{0, LowerCase | Space | Comma, LowerCase | LongFraction, LowerCase | Space | Comma | LongFraction}

// checkRFC3339 fails if RFC3339 accepts s under syn and time.Parse, given
// the same instant in its own spelling, disagrees; and if RFC3339 refuses
// the canonical spelling time.Format writes.
func checkRFC3339(t *testing.T, s string, syn Syntax) {
	t.Helper()
	sec, nsec, ok := RFC3339([]byte(s), syn)
	if !ok {
		if syn == 0 {
			if tm, err := time.Parse(time.RFC3339Nano, s); err == nil && tm.Format(time.RFC3339Nano) == s && tm.Year() <= 9999 {
				t.Fatalf("RFC3339(%q, 0) refused what time.Format writes", s)
			}
		}
		return
	}
	if nsec < 0 || nsec >= 1e9 {
		t.Fatalf("RFC3339(%q, %b): nanoseconds %d", s, syn, nsec)
	}
	std := []byte(s)
	if std[10] == 't' || std[10] == ' ' {
		std[10] = 'T'
	}
	if std[19] == ',' {
		std[19] = '.'
	}
	if std[len(std)-1] == 'z' {
		std[len(std)-1] = 'Z'
	}
	tm, err := time.Parse(time.RFC3339Nano, string(std))
	if err != nil || tm.Unix() != sec || int64(tm.Nanosecond()) != nsec {
		t.Fatalf("RFC3339(%q, %b) = %d, %d; time.Parse(%q) = %d, %d, %v", s, syn, sec, nsec, std, tm.Unix(), tm.Nanosecond(), err)
	}
}

func TestRFC3339(t *testing.T) {
	for _, c := range []struct {
		in   string
		want [4]bool // per entry of syntaxes
	}{
		{"2025-04-28T12:00:00Z", [4]bool{true, true, true, true}},
		{"2025-04-28T12:00:00.123456789Z", [4]bool{true, true, true, true}},
		{"2024-02-29T23:59:59.5-03:30", [4]bool{true, true, true, true}},
		{"0001-01-01T00:00:00Z", [4]bool{true, true, true, true}},
		{"0000-02-29T12:00:00Z", [4]bool{true, true, true, true}},
		{"9999-12-31T23:59:59.999999999+14:00", [4]bool{true, true, true, true}},
		{"2025-04-28t10:33:00.123456789z", [4]bool{false, true, true, true}},
		{"2025-04-28T10:33:00z", [4]bool{false, true, true, true}},
		{"2025-04-28 10:33:00Z", [4]bool{false, true, false, true}},
		{"2025-04-28T10:33:00,25Z", [4]bool{false, true, false, true}},
		{"2025-04-28T12:00:00.1234567891Z", [4]bool{false, false, true, true}},
		{"2025-02-29T12:00:00Z", [4]bool{}},
		{"2100-02-29T00:00:00Z", [4]bool{}},
		{"2025-04-31T00:00:00Z", [4]bool{}},
		{"2025-13-01T00:00:00Z", [4]bool{}},
		{"2025-04-28T24:00:00Z", [4]bool{}},
		{"2025-04-28T12:00:00", [4]bool{}},
		{"2025-04-28T12:00:00.Z", [4]bool{}},
		{"2025-04-28T12:00:00+0200", [4]bool{}},
		{"2025-04-28T12:00:00+25:00", [4]bool{}},
		{"2025-04-28T12:00:00+02:60", [4]bool{}},
		{"2025-04-28T12:00:00.5", [4]bool{}},
		{"2025-04-28T12:00:00ZZ", [4]bool{}},
	} {
		for k, syn := range syntaxes {
			if _, _, ok := RFC3339([]byte(c.in), syn); ok != c.want[k] {
				t.Errorf("RFC3339(%q, %b): ok %v, want %v", c.in, syn, ok, c.want[k])
			}
			checkRFC3339(t, c.in, syn)
		}
	}
	sec, nsec, _ := RFC3339([]byte("2024-02-29T23:59:59.5-03:30"), 0)
	if sec != 1709263799 || nsec != 5e8 {
		t.Errorf("2024-02-29T23:59:59.5-03:30 = %d, %d; want 1709263799, 500000000", sec, nsec)
	}
}

func FuzzRFC3339(f *testing.F) {
	for _, s := range []string{
		"2025-04-28T12:00:00.123Z", "2024-02-29T23:59:59-03:30", "2262-04-11T23:47:16.854775807Z",
		"2025-04-28T10:33:00.25+02:00", "2025-04-28T10:33:00Z", "2025-04-28t10:33:00,5z", "2025-04-28 10:33:00.1234567891Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, syn := range syntaxes {
			checkRFC3339(t, s, syn)
		}
	})
}

var unixSecondsSyntax = regexp.MustCompile(`^([0-9]{1,11})(?:\.([0-9]+))?$`)

// checkUnixSeconds compares UnixSeconds with a reading of the grammar by
// regular expression and strconv.
func checkUnixSeconds(t *testing.T, s string) {
	t.Helper()
	sec, nsec, ok := UnixSeconds([]byte(s))
	m := unixSecondsSyntax.FindStringSubmatch(s)
	if ok != (m != nil) {
		t.Fatalf("UnixSeconds(%q): ok %v, want %v", s, ok, m != nil)
	}
	if m == nil {
		return
	}
	wantSec, _ := strconv.ParseInt(m[1], 10, 64)
	wantNsec, _ := strconv.ParseInt((m[2] + strings.Repeat("0", 9))[:9], 10, 64)
	if sec != wantSec || nsec != wantNsec {
		t.Fatalf("UnixSeconds(%q) = %d, %d; want %d, %d", s, sec, nsec, wantSec, wantNsec)
	}
}

func TestUnixSeconds(t *testing.T) {
	for _, s := range []string{
		"1714291200", "1714291200.25", "0", "0.5", "99999999999", "99999999999.9999999999",
		"999999999999", "", ".5", "1714291200.", "-1", "+1", "1e9", "1714291200.2.5", "1714291200 ",
	} {
		checkUnixSeconds(t, s)
	}
	if sec, nsec, ok := UnixSeconds([]byte("1745836500.25")); !ok || sec != 1745836500 || nsec != 25e7 {
		t.Errorf("1745836500.25 = %d, %d, %v", sec, nsec, ok)
	}
}

func FuzzUnixSeconds(f *testing.F) {
	for _, s := range []string{"1714291200", "1714291200.25", "99999999999.123456789123", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(checkUnixSeconds)
}

func TestZeroAllocs(t *testing.T) {
	ts, us := []byte("2025-04-28T10:33:00.25+02:00"), []byte("1714291200.25")
	if n := testing.AllocsPerRun(100, func() {
		RFC3339(ts, LowerCase)
		UnixSeconds(us)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
