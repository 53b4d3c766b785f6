package detectors_test

import (
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/obs"
)

// A feed of per-minute withdrawal counts alone, with no announced space to
// tell an outage by (one collector peer's counts, as labelled BGP-anomaly
// sets give them), through the shipped burst rule: a table re-sent in a
// few minutes pages nobody, whether it falls in one bucket or across two,
// and a storm that goes on fires on its third bucket, dated from its
// first.
func TestShippedBurstRuleOnPerMinuteCounts(t *testing.T) {
	var got []detectors.Finding
	judge := judgeWith(shippedRule(t, "asn-withdrawal-burst"), func(f detectors.Finding) { got = append(got, f) })
	agg := aggregate.New(aggregate.Config{})
	const min1, ent = int64(60e9), "asn:64500"
	day := 24 * 60
	burst := func(m int) float64 {
		switch {
		case m >= day+3*60+4 && m <= day+3*60+6: // 03:04-03:06, across a boundary
			return 400
		case m >= day+7*60+1 && m <= day+7*60+3: // 07:01-07:03, inside a bucket
			return 500
		case m >= day+12*60 && m < day+12*60+45: // a storm, 12:00-12:45
			return 300
		}
		return float64(m * 7919 % 5) // routine churn, 0 to 4 a minute
	}
	for m := range 2 * day {
		ts := monday + int64(m)*min1
		agg.Observe(&obs.Observation{Time: ts + 1, Signal: rib.Withdrawals, Entity: ent, Value: burst(m)})
		if (m+1)%5 == 0 {
			agg.Advance(ts+min1, judge)
		}
	}
	storm := monday + int64(day+12*60)*min1
	if len(got) != 2 || got[0].Status != detectors.Firing || got[0].Start != storm || got[0].At != storm+3*w5 ||
		got[0].Observed != 1500 || got[1].Status != detectors.Resolved || got[1].At != storm+12*w5 {
		for _, f := range got {
			t.Logf("%s start %s at %s end %s observed %v", f.Status, time.Unix(0, f.Start).UTC(), time.Unix(0, f.At).UTC(),
				time.Unix(0, f.End).UTC(), f.Observed)
		}
		t.Fatalf("%d findings, want the storm's firing and its resolve", len(got))
	}
}
