package trafficmanager

import (
	"bytes"
	"os"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type scenario struct {
	Thresholds Thresholds                    `yaml:"thresholds"`
	Latency    map[string]map[string]float64 `yaml:"latency"`
	Failover   map[string]map[string]float64 `yaml:"failover"`
	Units      map[string]struct {
		Capacity float64            `yaml:"capacity"`
		Load     map[string]float64 `yaml:"load"`
	} `yaml:"units"`
	Ticks []struct {
		Name      string             `yaml:"name"`
		Capacity  map[string]float64 `yaml:"capacity"`
		Moves     []string           `yaml:"moves"`
		Changes   []string           `yaml:"changes"`
		Withdrawn []string           `yaml:"withdrawn"`
	} `yaml:"ticks"`
}

func (t *Thresholds) UnmarshalYAML(n *yaml.Node) error {
	var raw struct{ Max, Target, Acceptable float64 }
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*t = Thresholds(raw)
	return nil
}

func TestScenarioSectionsAndLoss(t *testing.T) {
	b, err := os.ReadFile("testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		t.Fatal(err)
	}
	if err := sc.Thresholds.Valid(); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(sc.Units))
	for id := range sc.Units {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	capa := map[string]float64{}
	for id, u := range sc.Units {
		capa[id] = u.Capacity
	}
	var st State
	for i, tick := range sc.Ticks {
		for id, c := range tick.Capacity {
			if _, ok := sc.Units[id]; !ok {
				t.Fatalf("tick %d: unknown unit %s", i, id)
			}
			capa[id] = c
		}
		in := Input{Latency: sc.Latency, Failover: sc.Failover}
		for _, id := range ids {
			loc, sec, _ := strings.Cut(id, "/")
			u := Unit{Location: loc, Section: sec, Capacity: capa[id], Thresholds: sc.Thresholds}
			for name, v := range sc.Units[id].Load {
				p, err := ParsePlan(name)
				if err != nil {
					t.Fatal(err)
				}
				u.Load[p] = v
			}
			in.Units = append(in.Units, u)
		}
		r := Tick(in, st)
		var changes []string
		for _, c := range r.Changes {
			changes = append(changes, c.String())
		}
		if got, want := movesString(r.State.Moves), strings.Join(tick.Moves, "\n"); got != want {
			t.Errorf("tick %d (%s) moves:\n%s\nwant:\n%s", i, tick.Name, got, want)
		}
		if got, want := strings.Join(changes, "\n"), strings.Join(tick.Changes, "\n"); got != want {
			t.Errorf("tick %d (%s) changes:\n%s\nwant:\n%s", i, tick.Name, got, want)
		}
		if got, want := strings.Join(r.State.Withdrawn, ","), strings.Join(tick.Withdrawn, ","); got != want {
			t.Errorf("tick %d (%s) withdrawn %q, want %q", i, tick.Name, got, want)
		}
		if len(r.Notes) != 0 {
			t.Errorf("tick %d (%s) notes: %v", i, tick.Name, r.Notes)
		}
		st = r.State
	}
}
