package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/obs"
)

func TestDefaultRulesLoad(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rules) < 3 {
		t.Fatalf("%d default rules", len(set.Rules))
	}
	r := set.Rules[0]
	if r.Name != "country-traffic-drop" || r.Severity != "critical" || r.Actions != ActionsOff {
		t.Fatalf("first rule = %+v", r)
	}
	if p := r.Params.(*detectors.TrafficDrop); p.Threshold != 0.4 || p.MinBaseline != 5e8 || p.FeedFaultShare != 0.8 {
		t.Fatalf("params = %+v", p)
	}
	if !r.Matches(obs.TrafficBytes, "country:UG") || r.Matches(obs.TrafficBytes, "asn:1") || r.Matches(obs.TrafficPackets, "country:UG") {
		t.Fatal("selector mismatch")
	}
}

func TestRuleErrorsCarryFileLineAndReason(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"rules:\n  - name: a\n    detector: nope\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n", `x.yaml:3: rule "a": unknown detector "nope"`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [bytes]\n    entities: [\"asn:*\"]\n", `x.yaml:4: rule "a": unknown signal "bytes"`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n    params:\n      threshold: 0.4\n      treshold: 2\n", `x.yaml:8: unknown key "treshold" in params of traffic_drop`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n    params:\n      for: 10m\n      threshold: 1.5\n", `x.yaml:8: rule "a": params.threshold: must be a fraction`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n    params:\n      for: ten\n", `x.yaml:7: rule "a": params.for: want a duration such as 30s, 5m or 168h, not ten`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n    severity: loud\n", `x.yaml:6: rule "a": unknown severity "loud"`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn*\"]\n", `x.yaml:5: rule "a": bad entity pattern "asn*"`},
		{"rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n", `x.yaml:6: rule "a" already defined at line 2`},
		{"rules:\n  - name: a\n   detector: x\n", `x.yaml:1: did not find expected`},
		{"rulez: []\n", `x.yaml:1: unknown key "rulez"`},
	}
	for _, c := range cases {
		_, err := Parse("x.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("doc %q:\n got  %v\n want %s...", c.doc, err, c.want)
		}
	}
}

func TestLoadAllRejectsARuleDefinedTwice(t *testing.T) {
	dir := t.TempDir()
	doc := []byte("rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n")
	os.WriteFile(filepath.Join(dir, "1.yaml"), doc, 0o644)
	os.WriteFile(filepath.Join(dir, "2.yaml"), doc, 0o644)
	_, err := LoadAll(dir)
	want := filepath.Join(dir, "2.yaml") + `:2: rule "a" already defined in ` + filepath.Join(dir, "1.yaml")
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	set, err := LoadAll(filepath.Join(dir, "1.yaml"))
	if err != nil || len(set.Rules) != 1 {
		t.Fatalf("single file: %v %v", set, err)
	}
}

// A directory is read as an operator names files: *.yaml and *.yml alike,
// in name order. One that holds neither, or a set with no rule, would
// start a service that judges nothing, and is refused.
func TestLoadAllDirectory(t *testing.T) {
	dir := t.TempDir()
	rule := func(name string) []byte {
		return []byte("rules:\n  - name: " + name + "\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n")
	}
	os.WriteFile(filepath.Join(dir, "20-b.yml"), rule("b"), 0o644)
	os.WriteFile(filepath.Join(dir, "10-a.yaml"), rule("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "30-c.yml"), rule("c"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not rules"), 0o644)
	set, err := LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Rules {
		got = append(got, r.Name+"@"+filepath.Base(r.File))
	}
	if want := []string{"a@10-a.yaml", "b@20-b.yml", "c@30-c.yml"}; !slices.Equal(got, want) {
		t.Fatalf("rules %v, want %v", got, want)
	}

	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "rules.txt"), rule("a"), 0o644)
	if _, err := LoadAll(empty); err == nil || err.Error() != "rules: "+empty+": no *.yaml or *.yml files in the directory" {
		t.Fatalf("directory without rules files: %v", err)
	}
	signalsOnly := t.TempDir()
	os.WriteFile(filepath.Join(signalsOnly, "s.yaml"), []byte("signals:\n  - {name: test_dir_only, kind: gauge, cadence: 5m}\n"), 0o644)
	if _, err := LoadAll(signalsOnly); err == nil || err.Error() != "rules: "+signalsOnly+": no rules, only signals or severity" {
		t.Fatalf("set without rules: %v", err)
	}
}

// The example rules load by their path from the repository root from any
// directory, as the binary bundles them; a file of that path on disk
// comes first, and a path that is neither still fails naming it.
func TestExampleRulesFromAnyDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, load := range []func(string) (*Set, error){Load, func(p string) (*Set, error) { return LoadAll(p) }} {
		set, err := load("examples/ioda/ioda.yaml")
		if err != nil || len(set.Rules) != 3 || set.Rules[0].Name != "ioda-bgp" {
			t.Fatalf("bundled IODA rules: %v, %v", set, err)
		}
	}
	if err := os.MkdirAll("examples/ioda", 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "rules:\n  - name: mine\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"country:*\"]\n"
	if err := os.WriteFile("examples/ioda/ioda.yaml", []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if set, err := Load("examples/ioda/ioda.yaml"); err != nil || len(set.Rules) != 1 || set.Rules[0].Name != "mine" {
		t.Errorf("a file on disk: %v, %v; want it, not the bundled copy", set, err)
	}
	if _, err := Load("examples/ioda/nope.yaml"); err == nil || !strings.Contains(err.Error(), "examples/ioda/nope.yaml") {
		t.Errorf("a path bundled nowhere: %v", err)
	}
}
