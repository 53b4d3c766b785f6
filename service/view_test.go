package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

func readAll(t *testing.T, b kafka.Bytes) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	out, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The view keeps the latest notification of each alert (an older one sent
// again after a restore does not replace it), lists the firing ones, and
// drops those resolved more than a day of data time before the newest,
// so it does not grow with every alert ever raised.
func TestDeploymentViewKeepsLatestAndForgets(t *testing.T) {
	v := newDeploymentView(nil)
	t0 := time.Date(2021, 1, 13, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	add := func(ev alerting.Event) { v.add(ev, viewKey(&ev)) }
	add(alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Firing, Start: at(0), At: at(0)})
	add(alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Resolved, Start: at(0), At: at(time.Hour)})
	add(alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Firing, Start: at(0), At: at(0)}) // sent again
	add(alerting.Event{ID: "b", Kind: alerting.KindAlert, Status: alerting.Firing, Start: at(time.Hour), At: at(time.Hour)})
	add(alerting.Event{ID: "e", Kind: alerting.KindEvent, Status: alerting.Firing, At: at(time.Hour), Outage: &alerting.Outage{Revision: 2}})
	add(alerting.Event{ID: "e", Kind: alerting.KindEvent, Status: alerting.Firing, At: at(time.Hour), Outage: &alerting.Outage{Revision: 1}})
	if got := v.ActiveAlerts(); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("active alerts %v, want b alone", got)
	}
	if ev, ok := v.Event("e"); !ok || ev.Revision != 2 {
		t.Fatalf("event e: %+v %v, want revision 2", ev, ok)
	}
	// A day and more later, enough notifications for a sweep.
	for i := range viewSweepEvery {
		add(alerting.Event{ID: fmt.Sprintf("n%d", i), Kind: alerting.KindAlert, Status: alerting.Firing, At: at(26 * time.Hour)})
	}
	if _, ok := v.alerts["a"]; ok {
		t.Fatal("alert a, resolved 25h before the newest, is still kept")
	}
	// Its episode's key is tombstoned, once, and nothing else is.
	if len(v.pending) != 1 || string(readAll(t, v.pending[0].Key)) != fmt.Sprintf("alert/a/%d", t0.UnixNano()) || v.pending[0].Value != nil {
		t.Fatalf("queued for the topic %v, want one tombstone of alert/a/%d", v.pending, t0.UnixNano())
	}
	if _, ok := v.alerts["b"]; !ok {
		t.Fatal("alert b, firing, was dropped")
	}
	if n := len(v.ActiveAlerts()); n != viewSweepEvery+1 {
		t.Fatalf("%d alerts firing, want %d", n, viewSweepEvery+1)
	}
}

// Through a real broker: an instance that sweeps an ended episode writes
// its tombstone, which kafka-go reads back as a nil value; a new instance
// reading the topic from the start skips the tombstone without a warning
// and ends with the same alerts. A later episode of the same alert has a
// key of its own, which the old episode's tombstone does not touch.
func TestDeploymentViewTombstonesSweptEpisodes(t *testing.T) {
	c := startBroker(t, 0, "", "view")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	var logs syncBuffer
	staged := func() *Staged {
		cfg := &Config{Kafka: KafkaConfig{Brokers: []string{addr}, ViewTopic: "view"}}
		return &Staged{cfg: cfg, client: kafkaio.NewClient(cfg.Kafka.Brokers, kafkaio.Transport(nil)),
			log: slog.New(slog.NewTextHandler(&logs, nil))}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := newDeploymentView(staged())
	go v.write(ctx)
	go v.follow(ctx)

	t0 := time.Date(2021, 1, 13, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	a := alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Firing, Start: at(0), At: at(0)}
	v.publish(&a)
	a.Status, a.At = alerting.Resolved, at(time.Hour)
	v.publish(&a)
	for i := range viewSweepEvery {
		v.publish(&alerting.Event{ID: fmt.Sprintf("n%d", i), Kind: alerting.KindAlert, Status: alerting.Firing, Start: at(26 * time.Hour), At: at(26 * time.Hour)})
	}
	// The same alert fires again, a new episode.
	again := alerting.Event{ID: "a", Kind: alerting.KindAlert, Status: alerting.Firing, Start: at(27 * time.Hour), At: at(27 * time.Hour)}
	v.publish(&again)

	// Read the topic raw until the tombstone is on it.
	old := fmt.Sprintf("alert/a/%d", t0.UnixNano())
	var tomb, newer bool
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	kafkaio.FetchBatches(rctx, []string{addr}, nil, quietLog(), "view", 0, kafka.FirstOffset, func(batch []kafka.Message) bool {
		for _, m := range batch {
			switch {
			case string(m.Key) == old && m.Value == nil:
				tomb = true
			case string(m.Key) == viewKey(&again) && m.Value != nil:
				newer = true
			}
		}
		return !(tomb && newer)
	})
	if !tomb || !newer {
		t.Fatalf("tombstone of %s on the topic: %v; the new episode's record: %v", old, tomb, newer)
	}

	// A new instance reads it all from the start.
	w := newDeploymentView(staged())
	go w.follow(ctx)
	waitFor(t, "the new instance's view", 30*time.Second, func() bool { return len(w.ActiveAlerts()) == viewSweepEvery+1 })
	got := w.ActiveAlerts()
	if i := slices.IndexFunc(got, func(ev alerting.Event) bool { return ev.ID == "a" }); i < 0 || !got[i].Start.Equal(at(27*time.Hour)) {
		t.Fatalf("the new instance does not hold alert a's second episode: %v", got)
	}
	if s := logs.String(); strings.Contains(s, "record skipped") {
		t.Fatalf("a tombstone was read as a bad record:\n%s", s)
	}
}
