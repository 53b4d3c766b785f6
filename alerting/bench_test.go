package alerting

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkOutbox measures enqueue plus delivery to a JSON-lines sink, with
// and without fsync (live vs replay settings).
func BenchmarkOutbox(b *testing.B) {
	for _, tc := range []struct {
		name   string
		noSync bool
	}{{"fsync", false}, {"nosync", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := OutboxConfig{NoSync: tc.noSync, Logger: quietLogger()}
			o, err := OpenOutbox(b.TempDir(), NewJSONL("out", io.Discard), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			evs := make([]*Event, 256)
			for i := range evs {
				evs[i] = testEvent(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				ev := *evs[i%len(evs)]
				ev.Start = t0.Add(time.Duration(i) * time.Minute) // distinct delivery keys
				if err := o.Enqueue(&ev); err != nil {
					b.Fatal(err)
				}
				if err := o.Drain(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
