package words

import (
	"testing"
	"time"
)

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{
		{1, "view", "1 view"}, {2, "view", "2 views"}, {0, "network", "0 networks"},
		{1, "session", "1 session"}, {3, "session", "3 sessions"}, {2, "prefix", "2 prefixes"},
		{2, "match", "2 matches"}, {1, "destination", "1 destination"},
	} {
		if got := Plural(c.n, c.noun); got != c.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
	if got := PluralOf(2, "query", "queries"); got != "2 queries" {
		t.Errorf("PluralOf: %q", got)
	}
}

func TestUnits(t *testing.T) {
	for unit, want := range map[string]string{"slash24": "/24 prefixes", "slash48": "/48 prefixes", "Mbps": "Mbit/s",
		"mbps": "Mbit/s", "ms": "ms", "bytes": "bytes", "": ""} {
		if got := Unit(unit); got != want {
			t.Errorf("Unit(%q) = %q, want %q", unit, got, want)
		}
	}
	five := 5 * time.Minute
	for _, c := range []struct {
		unit      string
		perBucket bool
		want      string
	}{
		{"bytes", true, "bytes/300s"}, {"queries", true, "queries/300s"}, {"slash24", false, "/24 prefixes"},
		{"Mbps", false, "Mbit/s"}, {"ratio", false, "ratio"}, {"", true, ""},
	} {
		if got := JSONUnit(c.unit, c.perBucket, five); got != c.want {
			t.Errorf("JSONUnit(%q, %v) = %q, want %q", c.unit, c.perBucket, got, c.want)
		}
	}
}

func TestFigure(t *testing.T) {
	for v, want := range map[float64]string{0.8: "0.8", 0.2: "0.2", 5.19: "5.19", 5.194: "5.19", 28: "28", 99.94: "99.9", 2917: "2917", 1150.4: "1150", 0: "0", -0.25: "-0.25"} {
		if got := Figure(v); got != want {
			t.Errorf("Figure(%v) = %q, want %q", v, got, want)
		}
	}
}
