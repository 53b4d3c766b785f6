package service

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
)

// An IODA export of declared signals, produced line by line to a topic,
// gives the live service exactly the alerts that replay of the file gives.
func TestDeclaredSignalsFromKafkaAlertAsReplayDoes(t *testing.T) {
	set, err := rules.Load("../examples/ioda/ioda.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var recs []*ingest.Record
	if _, err := obsfile.ReadFileStats("../examples/ioda/uganda-2021-01-13.csv.gz", func(r ingest.Record) error {
		recs = append(recs, &r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sink := alerting.NewJSONL("replay", &out)
	send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
	// The reference replay correlates too: its output is alerts and events.
	p, err := pipeline.New(pipeline.Config{Rules: set, Logger: quietLog(), Events: send}, send)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("ioda", append([]*ingest.Record(nil), recs...))}, nil); err != nil {
		t.Fatal(err)
	}
	want := lines(out.String())
	alerts := 0
	for _, l := range want {
		if strings.Contains(l, `"kind":"alert"`) {
			alerts++
		}
	}
	if alerts != 6 || !strings.Contains(out.String(), `"signal":"bgp_visible_slash24"`) {
		t.Fatalf("replay gave %d alerts: %q", alerts, want)
	}

	wantByKey, err := byDeliveryKey(want)
	if err != nil {
		t.Fatal(err)
	}

	c := startBroker(t, 0, "", "ioda")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produce(t, addr, "ioda", recs)
	dir := t.TempDir()
	cfg := testConfig(addr, dir, Topic{Name: "ioda", Stream: obsfile.Stream, Format: obsfile.FormatCSV})
	cfg.Kafka.InternalPartitions = 2
	_, _, stop := startStaged(t, mustValidate(t, cfg), Options{Rules: set, Map: netmap.New()})
	waitLines(t, filepath.Join(dir, "alerts.jsonl"), wantByKey)
	stop()
	// Byte for byte, none extra and, with no restart, none twice.
	all := readLines(t, filepath.Join(dir, "alerts.jsonl"))
	got, err := byDeliveryKey(all)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(got) {
		t.Errorf("%d lines delivered for %d delivery keys", len(all), len(got))
	}
	sameByKey(t, wantByKey, got)
}
