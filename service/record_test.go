package service

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/replay"
)

// A recorded topic replays to the records that were produced, with their
// timestamps, keys and stream/format, and to the same alerts.
func TestRecordReplays(t *testing.T) {
	f := loadFixture(t)
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	recs := f.recs[:5000]
	for i, r := range recs[:3] {
		r2 := *r
		r2.Key = []byte{byte(i), 'k'}
		recs = slices.Clone(recs)
		recs[i] = &r2
	}
	produce(t, addr, "flows", recs)

	var buf bytes.Buffer
	n, err := kafkaio.Record(context.Background(), kafkaio.RecordOptions{Brokers: []string{addr}, Topic: "flows",
		Stream: "flows", Format: "goflow2-pb"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(recs)) {
		t.Fatalf("recorded %d, want %d", n, len(recs))
	}
	path := filepath.Join(t.TempDir(), "flows"+recordfile.Ext)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := replay.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byValue := map[string]*ingest.Record{}
	for _, r := range recs {
		byValue[string(r.Value)] = r
	}
	got := 0
	for {
		r, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			break
		}
		got++
		want := byValue[string(r.Value)]
		if want == nil || r.Time != want.Time || !bytes.Equal(r.Key, want.Key) || r.Stream != "flows" ||
			r.Format != "goflow2-pb" || r.Topic != "flows" || r.Offset < 0 {
			t.Fatalf("record %d: %+v", got, r)
		}
	}
	if got != len(recs) {
		t.Fatalf("replayed %d, want %d", got, len(recs))
	}
}
