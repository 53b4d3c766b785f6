package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sweep over the shipped topology. First layers checked by hand (own
// load: AKL 2,200, WLG 1,000, CHC 900, SYD 3,600, MEL 2,800, BNE 1,300,
// PER 800):
//   - AKL: WLG 1,000 + 0.3 × 2,200 = 1,660 of 1,500 (110.7 %), past its
//     capacity, so WLG's own row carries on: CHC 900 + 0.3 × 1,000 +
//     0.3 × 0.3 × 2,200 = 1,398 (93.2 %, over its 85 %).
//   - CHC: AKL 2,200 + 540 = 2,740 of 3,000 (91.3 %), WLG 1,360 (90.7 %).
//   - MEL: SYD 3,600 + 1,960 = 5,560 of 6,000 (92.7 %), PER 1,360 (90.7 %).
//   - SYD: BNE 1,300 + 1,080 = 2,380 of 2,000 (119 %), MEL 4,960 (99.2 %).
//   - WLG: AKL 2,900 (96.7 %); CHC 1,200 (80 %) stays under 85 %.
//   - BNE and PER overload no one (SYD 77 %, MEL 64 % at worst) and are
//     not listed.
func TestActionsPredictShippedTopology(t *testing.T) {
	out, err := runActions(t, "", "predict", "../../deploy/tm-topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := `AKL offline:
  first layer: WLG 110.7% (max 85%)
  cascade: WLG past capacity, then CHC 93.2% (max 85%)
CHC offline:
  first layer: AKL 91.3% (max 90%), WLG 90.7% (max 85%)
  cascade: AKL 91.3% (max 90%), WLG 90.7% (max 85%)
MEL offline:
  first layer: PER 90.7% (max 90%), SYD 92.7% (max 90%)
  cascade: PER 90.7% (max 90%), SYD 92.7% (max 90%)
  after shedding: PER: 160 ms/s found no destination
  after shedding: SYD/s1: 305 ms/s found no destination
  after shedding: SYD/s2: 380 ms/s found no destination
SYD offline:
  first layer: BNE 119.0% (max 90%), MEL 99.2% (max 90%)
  cascade: BNE, MEL, PER, AKL, WLG past capacity, then CHC 98.0% (max 85%)
  after shedding: BNE: 530 ms/s found no destination
  after shedding: MEL: 885 ms/s found no destination
WLG offline:
  first layer: AKL 96.7% (max 90%)
  cascade: AKL 96.7% (max 90%)
`
	if out != want {
		t.Fatalf("predict:\n%s\nwant:\n%s", out, want)
	}
	out, err = runActions(t, "", "predict", "--json", "--all", "../../deploy/tm-topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d locations in --all --json", len(lines))
	}
	var bne struct {
		Location string
		First    []any
		Cascade  []any
	}
	if err := json.Unmarshal([]byte(lines[1]), &bne); err != nil || bne.Location != "BNE" || len(bne.First) != 0 || len(bne.Cascade) != 0 {
		t.Fatalf("BNE: %+v %v", bne, err)
	}
	if _, err := runActions(t, "", "predict", "nope.yaml"); err == nil {
		t.Fatal("missing topology accepted")
	}
}

// actions serve with a topology and no live feed answers capacity from
// the topology's own plan: in the worked example B is filled to its
// acceptable level by A's moves, so it has no room (the topology alone
// would say 300) and no neighbour it has a latency to.
func TestActionsServeCapacityFromTopologyPlan(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := actionsCmd()
	cmd.SetArgs([]string{"serve", "--config", "../../deploy/actions.yaml", "--listen", addr, "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
		"--topology", "../../trafficmanager/testdata/stale.yaml"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var got string
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/api/v1/capacity?dc=B&need=100")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := `{"dc":"B","need_ms":100,"ok":false,"room_ms":0,"short_ms":100}` + "\n"; got != want {
		t.Errorf("capacity: %s", got)
	}
	// The map of moves draws the same plan: five moves, an arrow from A to
	// each of B, C and D.
	resp, err := http.Get("http://" + addr + "/tm/map/map.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Moves  []any
		Arrows []struct{ From, To string }
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || len(v.Moves) != 5 || len(v.Arrows) != 3 || v.Arrows[0].From != "A" || v.Arrows[2].To != "D" {
		t.Errorf("map: %+v %v", v, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
