package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

func TestDeclaredSignalsWorkInRules(t *testing.T) {
	doc := `signals:
  - name: test_rules_visible
    unit: /24s
    kind: gauge
    feed: test-rules-ext
    cadence: 10m
rules:
  - name: visible-drop
    detector: prefix_withdrawal
    signals: [test_rules_visible]
    entities: ["country:*"]
`
	set, err := Parse("x.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	sig, ok := obs.Lookup("test_rules_visible")
	if !ok {
		t.Fatal("signal not declared")
	}
	d := sig.Def()
	if d.Agg != obs.Last || d.Cadence != 600e9 || d.Feed != "test-rules-ext" || d.Kind != obs.KindGauge || d.ZeroWhenAbsent {
		t.Fatalf("declared as %+v", d)
	}
	if len(set.Signals) != 1 || set.Signals[0] != sig || !set.Rules[0].Matches(sig, "country:UG") {
		t.Fatalf("set %+v", set)
	}
	// Loading the same file again (a second rule set, a reload) is fine.
	if _, err := Parse("x.yaml", []byte(doc)); err != nil {
		t.Fatalf("second load: %v", err)
	}
}

func TestSignalsFileLaterInNameOrderServesEarlierRules(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "10-rules.yaml"), []byte(`rules:
  - name: radar-drop
    detector: traffic_drop
    signals: [test_rules_radar]
    entities: ["country:*"]
`), 0o644)
	os.WriteFile(filepath.Join(dir, "90-signals.yaml"), []byte(`signals:
  - {name: test_rules_radar, unit: requests, kind: volume, feed: test-radar, missing_is_zero: true}
`), 0o644)
	set, err := LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rules) != 1 || len(set.Signals) != 1 || set.Signals[0].Def().Agg != obs.Sum || !set.Signals[0].Def().ZeroWhenAbsent {
		t.Fatalf("set %+v", set)
	}
}

func TestSignalErrorsCarryFileLineAndReason(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"signals:\n  - name: Bad-Name\n    kind: gauge\n", `x.yaml:2: signal "Bad-Name": want a name of lower-case`},
		{"signals:\n  - name: test_e1\n    kind: level\n", `x.yaml:3: signal "test_e1": kind "level": want one of volume, gauge, ratio, distinct`},
		{"signals:\n  - name: test_e2\n    kind: gauge\n    aggregate: median\n", `x.yaml:4: signal "test_e2": unknown aggregation "median"`},
		{"signals:\n  - name: test_e3\n    kind: gauge\n    cadence: often\n", `x.yaml:4: signal "test_e3": cadence "often": want a duration`},
		{"signals:\n  - name: test_e4\n    kind: ratio\n    missing_is_zero: true\n", `x.yaml:4: signal "test_e4": only a volume can read a missing value as zero`},
		{"signals:\n  - name: traffic_bytes\n    kind: volume\n", `x.yaml:2: signal "traffic_bytes": signal traffic_bytes is built in`},
		{"signals:\n  - name: test_e5\n    kind: gauge\n    unit: x\n    colour: red\n", `x.yaml:5: unknown key "colour" in signal`},
		{"signals:\n  name: test_e6\n", `x.yaml:2: 'signals:' must be a list`},
		{"signals:\n  - name: test_e8\n    kind: gauge\n    precision: 0.5\n", `x.yaml:4: signal "test_e8": precision 0.5: want a relative error between`},
		{"signals:\n  - name: test_e9\n    kind: gauge\n    cadence: 5m\n    counted_every: 1m\n", `x.yaml:5: signal "test_e9": counted_every needs noise: poisson`},
		{"signals:\n  - name: test_e10\n    kind: gauge\n    noise: poisson\n    counted_every: 1m\n", `x.yaml:5: signal "test_e10": counted_every needs a cadence`},
		{"signals:\n  - name: test_e11\n    kind: gauge\n    cadence: 5m\n    noise: poisson\n    counted_every: 2m\n", `x.yaml:6: signal "test_e11": counted_every "2m": want a duration that divides the cadence (5m0s)`},
	}
	for _, c := range cases {
		_, err := Parse("x.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("doc %q:\n got  %v\n want %s...", c.doc, err, c.want)
		}
	}
	// The same name declared two ways in two files.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("signals:\n  - {name: test_e7, kind: gauge, cadence: 5m}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("signals:\n  - {name: test_e7, kind: gauge, cadence: 30m}\n"), 0o644)
	_, err := LoadAll(dir)
	if err == nil || !strings.Contains(err.Error(), "b.yaml:2: signal \"test_e7\": signal test_e7 already declared differently") {
		t.Fatalf("conflict: %v", err)
	}
}

// A Poisson count reported as the mean of one-minute counts over its
// 5-minute cadence is the mean of five: its sampling variance is level/5.
func TestDeclaredMeanOfCounts(t *testing.T) {
	if _, err := Parse("m.yaml", []byte("signals:\n  - {name: test_mean5, kind: distinct, cadence: 5m, noise: poisson, counted_every: 1m}\n")); err != nil {
		t.Fatal(err)
	}
	sig, ok := obs.Lookup("test_mean5")
	if !ok || sig.Def().MeanOf != 5 || sig.Def().SamplingVar(4) != 0.8 {
		t.Fatalf("test_mean5: mean of %v counts, variance %v at 4; want 5 and 0.8", sig.Def().MeanOf, sig.Def().SamplingVar(4))
	}
}

func TestDeclaredPrecisionReachesTheHistory(t *testing.T) {
	if _, err := Parse("p.yaml", []byte("signals:\n  - {name: test_fine, kind: gauge, precision: 0.001}\n")); err != nil {
		t.Fatal(err)
	}
	sig, ok := obs.Lookup("test_fine")
	if !ok || sig.Def().Precision != 0.001 {
		t.Fatalf("test_fine declared with precision %v, want 0.001", sig.Def().Precision)
	}
}
