package netmap

import "testing"

func TestName(t *testing.T) {
	m := New()
	m.Names[20294] = "MTN Uganda"
	m.Names[1299] = "Arelion"
	// What inputs call entities: a fallback the map's own names win over.
	m.Given = map[string]string{"region:1226": "Gaza Strip", "asn:64497": "Example Net", "asn:20294": "MTN"}
	for entity, want := range map[string]string{
		"region:1226":          "Gaza Strip (region 1226)",
		"region:4369":          "region 4369",
		"asn:64497":            "Example Net (AS64497)",
		"asn:20294":            "MTN Uganda (AS20294)",
		"asn:64496":            "AS64496",
		"country:ES":           "Spain",
		"country:es":           "Spain",
		"country:BO":           "Bolivia",
		"country:QQ":           "QQ",
		"region:PT-11":         "Lisboa, Portugal (PT-11)",
		"region:US-TN":         "Tennessee, United States (US-TN)",
		"region:GB-ZZZ":        "GB-ZZZ, United Kingdom",
		"transit:1299@ams01":   "Arelion (AS1299) at ams01",
		"transit:1299":         "Arelion (AS1299)",
		"zone:virginmedia.com": "virginmedia.com",
		"dc:lis01":             "lis01",
		"nonsense":             "nonsense",
		"asn:x":                "asn:x",
	} {
		if got := m.Name(entity); got != want {
			t.Errorf("Name(%q) = %q, want %q", entity, got, want)
		}
	}
}

func TestAnnotate(t *testing.T) {
	m := New()
	m.Names[20294] = "MTN Uganda"
	labels := map[string]string{"country": "UG"}
	sum, out := m.Annotate("asn:20294", "announced space of asn:20294 down 54.9%; asn:202940 unaffected", labels)
	if sum != "announced space of MTN Uganda (AS20294) down 54.9%; asn:202940 unaffected" {
		t.Errorf("summary %q", sum)
	}
	if out["display"] != "MTN Uganda (AS20294)" || out["country"] != "UG" || len(labels) != 1 {
		t.Errorf("labels %v (input now %v)", out, labels)
	}
	// Nothing to name: the same map back.
	if s, l := m.Annotate("kind:x", "x", labels); s != "x" || len(l) != 1 {
		t.Errorf("unknown kind: %q %v", s, l)
	}
}
