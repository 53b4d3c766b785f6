package planhook

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outagewatch/outagewatch/trafficmanager"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	ins, _ := inputs(t)
	d := &Driver{Mode: "dry-run", Metrics: NewMetrics(reg)}
	// ATL's learnt maximum is a poor fit, ORD's is used.
	for i := range ins[3].Units {
		switch ins[3].Units[i].ID() {
		case "ATL":
			ins[3].Units[i].Learnt = &trafficmanager.Learnt{Reason: "R² 0.1 below 0.60"}
		case "ORD":
			ins[3].Units[i].Learnt = &trafficmanager.Learnt{OK: true, Max: 0.93}
		}
	}
	for i, in := range ins[:4] {
		if _, err := d.Tick(context.Background(), time.Unix(int64(i), 0), in); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP outagewatch_tm_changes_total Plan changes emitted, by operation (move, revert, withdraw, announce).
# TYPE outagewatch_tm_changes_total counter
outagewatch_tm_changes_total{op="move"} 7
outagewatch_tm_changes_total{op="revert"} 1
outagewatch_tm_changes_total{op="withdraw"} 1
# HELP outagewatch_tm_threshold_fallback 1 when the learnt maximum threshold was not used (poor fit) and the static one was.
# TYPE outagewatch_tm_threshold_fallback gauge
outagewatch_tm_threshold_fallback{unit="ATL"} 1
outagewatch_tm_threshold_fallback{unit="EWR"} 0
outagewatch_tm_threshold_fallback{unit="IAD/s1"} 0
outagewatch_tm_threshold_fallback{unit="IAD/s2"} 0
outagewatch_tm_threshold_fallback{unit="IAD/s3"} 0
outagewatch_tm_threshold_fallback{unit="ORD"} 0
# HELP outagewatch_tm_withdrawn_locations Locations whose anycast routes the plan in force withdraws.
# TYPE outagewatch_tm_withdrawn_locations gauge
outagewatch_tm_withdrawn_locations 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "outagewatch_tm_changes_total", "outagewatch_tm_threshold_fallback", "outagewatch_tm_withdrawn_locations"); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(d.Metrics.maxThreshold.WithLabelValues("ORD", "learnt")); v != 0.93 {
		t.Fatalf("ORD learnt max %v", v)
	}
	if v := testutil.ToFloat64(d.Metrics.util.WithLabelValues("ORD")); v != 0.8 {
		t.Fatalf("ORD planned utilisation %v", v)
	}
}
