package archtest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func loadRules(t *testing.T) []Rule {
	t.Helper()
	f, err := os.Open("forbidden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules, err := ParseRules("forbidden.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// The module's own packages take none of the forbidden directions, and
// every rule still names packages that exist, so that a rename cannot
// turn a rule into one that passes whatever the imports are.
func TestImportsPointOneWay(t *testing.T) {
	rules := loadRules(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	g, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cmd/outagewatch", "internal/archtest", "service", "ingest/quality"} {
		if _, ok := g[want]; !ok {
			t.Fatalf("package %s not listed: the graph has %d packages", want, len(g))
		}
	}
	for _, r := range rules {
		for _, p := range []string{r.From, r.To} {
			found := false
			for q := range g {
				found = found || under(q, p)
			}
			if !found {
				t.Errorf("%s:%d: no package %s in the module: the rule checks nothing", r.File, r.Line, p)
			}
		}
	}
	for _, v := range Check(g, rules) {
		t.Errorf("forbidden import: %s", v)
	}
}

// Check finds each forbidden direction, direct or through other packages,
// with the shortest chain; prefixes stop at path segments; allowed
// directions and a package inside both prefixes pass.
func TestCheckFindsEachDirection(t *testing.T) {
	rules := loadRules(t)
	g := Graph{
		"detectors":        {"obs", "ingest/quality"},
		"netmap/sources":   {"netmap", "ingest/bgp"},
		"rules":            {"detectors", "obs"},
		"service":          {"stage", "ingest"},
		"stage":            {"pipeline", "replay"},
		"pipeline":         {"obs"},
		"replay":           {"ingest", "report"},
		"report":           {"chart"},
		"ingest":           {"netmap", "obs"},
		"ingest/quality":   {"ingest", "obs"},
		"ingest/bgp":       {"ingest"},
		"ingestx":          {},
		"netmapper":        {"ingestx"},
		"servicebus":       {"replay"},
		"obs":              {},
		"netmap":           {},
		"chart":            {},
		"cmd/outagewatch":  {"service", "replay", "ingest/quality"},
		"service/internal": {"ingest/recordfile"},
	}
	var got []string
	for _, v := range Check(g, rules) {
		got = append(got, strings.Join(v.Chain, " ")+" | "+v.Rule.From+">"+v.Rule.To)
	}
	want := []string{
		"detectors ingest/quality | detectors>ingest",
		"netmap/sources ingest/bgp | netmap>ingest",
		// rules reaches ingest through detectors.
		"rules detectors ingest/quality | rules>ingest",
		"service stage replay | service>replay",
		"service stage replay report | service>report",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	delete(g, "netmap/sources")
	g["detectors"] = []string{"obs", "obs/quality"}
	g["stage"] = []string{"pipeline"}
	if vs := Check(g, rules); len(vs) != 0 {
		t.Fatalf("after the fixes: %v", vs)
	}
}

func TestParseRulesErrors(t *testing.T) {
	for in, want := range map[string]string{
		"# only a comment\n\n":          "r.txt: no rules",
		"service replay why\nservice\n": "r.txt:2: want FROM TO WHY",
		"service /replay why\n":         `r.txt:1: "/replay": want a package path`,
		"ingest/... obs why\n":          `r.txt:1: "ingest/...": want a package path`,
		"obs obs why\n":                 "r.txt:1: obs may not be forbidden to depend on itself",
	} {
		_, err := ParseRules("r.txt", strings.NewReader(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v, want %s...", in, err, want)
		}
	}
	rules, err := ParseRules("r.txt", strings.NewReader("# c\nservice  replay  the live runtime  needs nothing\n"))
	if err != nil || len(rules) != 1 || rules[0] != (Rule{From: "service", To: "replay", Why: "the live runtime needs nothing", File: "r.txt", Line: 2}) {
		t.Fatalf("%+v %v", rules, err)
	}
}
