package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

// The view keeps the latest notification of each alert (an older one sent
// again after a restore does not replace it), lists the firing ones, and
// drops those resolved more than a day of data time before the newest,
// so it does not grow with every alert ever raised.
func TestDeploymentViewKeepsLatestAndForgets(t *testing.T) {
	v := newDeploymentView(nil)
	t0 := time.Date(2021, 1, 13, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	v.add(alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Firing, At: at(0)})
	v.add(alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Resolved, At: at(time.Hour)})
	v.add(alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Firing, At: at(0)}) // sent again
	v.add(alerting.Event{ID: "b", Kind: alerting.KindAlert, Status: alerting.Firing, At: at(time.Hour)})
	v.add(alerting.Event{ID: "e", Kind: alerting.KindEvent, Status: alerting.Firing, At: at(time.Hour), Outage: &alerting.Outage{Revision: 2}})
	v.add(alerting.Event{ID: "e", Kind: alerting.KindEvent, Status: alerting.Firing, At: at(time.Hour), Outage: &alerting.Outage{Revision: 1}})
	if got := v.ActiveAlerts(); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("active alerts %v, want b alone", got)
	}
	if ev, ok := v.Event("e"); !ok || ev.Revision != 2 {
		t.Fatalf("event e: %+v %v, want revision 2", ev, ok)
	}
	// A day and more later, enough notifications for a sweep.
	for i := range viewSweepEvery {
		v.add(alerting.Event{ID: fmt.Sprintf("n%d", i), Kind: alerting.KindAlert, Status: alerting.Firing, At: at(26 * time.Hour)})
	}
	if _, ok := v.alerts["a"]; ok {
		t.Fatal("alert a, resolved 25h before the newest, is still kept")
	}
	if _, ok := v.alerts["b"]; !ok {
		t.Fatal("alert b, firing, was dropped")
	}
	if n := len(v.ActiveAlerts()); n != viewSweepEvery+1 {
		t.Fatalf("%d alerts firing, want %d", n, viewSweepEvery+1)
	}
}
