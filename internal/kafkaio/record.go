package kafkaio

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
)

// RecordOptions configure Record.
type RecordOptions struct {
	Brokers []string
	Topic   string
	// Stream and Format are written into each record so that replay picks
	// the decoder the live service would have used.
	Stream, Format string
	// Follow keeps recording new records until ctx ends; otherwise Record
	// stops at the high watermarks it found when it started.
	Follow bool
	Dialer *kafka.Dialer
}

// Record dumps a topic, every partition from its first offset, to w in the
// record-file format that `outagewatch replay` reads (recordfile.Write):
// timestamps, keys and headers included. It reads outside any consumer
// group, so recording never moves the service's offsets.
func Record(ctx context.Context, o RecordOptions, w io.Writer) (int64, error) {
	tr := Transport(o.Dialer)
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(o.Brokers...), Timeout: 10 * time.Second, Transport: tr}
	ends, err := HighWatermarks(ctx, client, []string{o.Topic})
	if err != nil {
		return 0, fmt.Errorf("record %s: %w", o.Topic, err)
	}
	var (
		mu    sync.Mutex
		n     int64
		errs  = make(chan error, len(ends))
		wg    sync.WaitGroup
		rctx  context.Context
		abort context.CancelFunc
	)
	rctx, abort = context.WithCancel(ctx)
	defer abort()
	for k, end := range ends {
		if end == 0 && !o.Follow {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: o.Brokers, Topic: o.Topic, Partition: int(k.Partition),
				Dialer: o.Dialer, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond})
			defer r.Close()
			if err := r.SetOffset(kafka.FirstOffset); err != nil {
				errs <- err
				return
			}
			for {
				m, err := r.FetchMessage(rctx)
				if err != nil {
					if rctx.Err() == nil || !o.Follow {
						errs <- fmt.Errorf("partition %d: %w", k.Partition, err)
					}
					return
				}
				rec := ingest.Record{Stream: o.Stream, Format: o.Format, Topic: m.Topic, Partition: int32(m.Partition),
					Offset: m.Offset, Time: m.Time.UnixNano(), Key: m.Key, Value: m.Value}
				for _, h := range m.Headers {
					rec.Headers = append(rec.Headers, ingest.Header{Key: h.Key, Value: h.Value})
				}
				mu.Lock()
				err = recordfile.Write(w, &rec)
				n++
				mu.Unlock()
				if err != nil {
					errs <- err
					abort()
					return
				}
				if !o.Follow && m.Offset+1 >= end {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return n, fmt.Errorf("record %s: %w", o.Topic, err)
	}
	return n, nil
}
