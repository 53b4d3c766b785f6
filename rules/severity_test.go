package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShippedRulesCarryTheEventSeverity(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s := set.Severity
	if s == nil || s.Warning != 0.05 || s.Critical != 0.25 || s.FullAfter != 30*time.Minute ||
		s.File != "rules/default/50-events.yaml" || s.Line != 19 {
		t.Fatalf("shipped severity %+v", s)
	}
}

func TestSeverityBlockErrorsCarryFileLineAndReason(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"severity:\n  warning: 0.1\n  critical: 0.4\n", `x.yaml:1: severity: missing full_after`},
		{"severity:\n  warning: 0.1\n  critical: 0.1\n  full_after: 1h\n", `x.yaml:3: severity.critical: 0.1 must be above warning (0.1)`},
		{"severity:\n  warning: 0\n  critical: 0.4\n  full_after: 1h\n", `x.yaml:2: severity.warning: 0: want an impact above 0 and at most 1`},
		{"severity:\n  warning: 0.1\n  critical: 1.5\n  full_after: 1h\n", `x.yaml:3: severity.critical: 1.5: want an impact above 0 and at most 1`},
		{"severity:\n  warning: 0.1\n  critical: 0.4\n  full_after: soon\n", `x.yaml:4: severity.full_after: want a duration such as 30s, 5m or 168h, not soon`},
		{"severity:\n  warning: 0.1\n  critical: 0.4\n  full_after: -5m\n", `x.yaml:4: severity.full_after: -5m0s: want a positive duration`},
		{"severity:\n  warning: low\n", `x.yaml:2: severity.warning: want a number, not low`},
		{"severity:\n  warning: 0.1\n  critcal: 0.4\n", `x.yaml:3: unknown key "critcal" in severity: did you mean "critical"?`},
		{"severity: [0.1, 0.4]\n", `x.yaml:1: severity: want a mapping`},
		{"severty:\n  warning: 0.1\n", `x.yaml:1: unknown key "severty": did you mean "severity"?`},
	} {
		_, err := Parse("x.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.doc, err, c.want)
		}
	}
}

// A team's own rules may set the event severity once, beside their rules
// or in a file of its own; without a block they keep the shipped one.
func TestLoadAllSeverity(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	rule := "rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"country:*\"]\n"
	own := write("a.yaml", rule)
	sev := write("b.yaml", "# paging\nseverity:\n  warning: 0.1\n  critical: 0.5\n  full_after: 1h\n")

	set, err := LoadAll(own)
	if err != nil {
		t.Fatal(err)
	}
	if s := set.Severity; s.File != "rules/default/50-events.yaml" || s.Critical != 0.25 {
		t.Fatalf("without a block: %+v", s)
	}
	set, err = LoadAll(own, sev)
	if err != nil {
		t.Fatal(err)
	}
	if s := set.Severity; s.File != sev || s.Line != 2 || s.Warning != 0.1 || s.Critical != 0.5 || s.FullAfter != time.Hour || len(set.Rules) != 1 {
		t.Fatalf("with a block: %+v, %d rules", s, len(set.Rules))
	}
	if set, err = Load(sev); err != nil || set.Severity.File != sev || len(set.Rules) != 0 {
		t.Fatalf("severity file alone: %v %+v", err, set)
	}
	again := write("c.yaml", "severity:\n  warning: 0.2\n  critical: 0.6\n  full_after: 1h\n")
	_, err = LoadAll(own, sev, again)
	if err == nil || err.Error() != again+":1: severity already defined in "+sev+":2" {
		t.Fatalf("second block: %v", err)
	}
}

func TestSeverityRejectsNaN(t *testing.T) {
	_, err := Parse("x.yaml", []byte("severity:\n  warning: .nan\n  critical: 0.5\n  full_after: 1h\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "x.yaml:2: severity.warning: NaN") {
		t.Fatalf("got %v", err)
	}
}
