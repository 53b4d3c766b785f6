package pipeline

import (
	"encoding"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// decodeStage is the chain's first stage: records, decoded by their
// stream's decoder, become observations in aggregate's open buckets.
// Records of ordered streams (BGP) are held until the bucket they fall in
// closes. Its state is the decoders built (and the state of the stateful
// ones, the routing table) and the held records; its counters are the
// records in and the decode errors, by stream/format and stream/reason.
type decodeStage struct {
	env  *ingest.Env
	sink *aggregate.Aggregator // aggregate's stage one
	agg  *aggregateStage       // its counters are refreshed as records arrive
	// last is the decoder of the last record: a live partition or a
	// replayed file sends one stream in one format, so the map lookup
	// (two strings hashed) is rarely needed.
	last     *decoderEntry
	decoders map[formatKey]*decoderEntry // under mu
	held     held
	rejected func(rec *ingest.Record, err error)
	log      *slog.Logger

	mu      sync.Mutex
	records map[string]int64 // restored totals; live counts are in decoders
	errs    map[string]int64
}

type formatKey struct{ stream, format string }

type decoderEntry struct {
	key     formatKey
	dec     ingest.Decoder
	ordered bool  // records are held until their bucket closes
	records int64 // under decodeStage.mu
}

func newDecodeStage(cfg Config, agg *aggregateStage) *decodeStage {
	d := &decodeStage{sink: agg.pre, agg: agg, decoders: map[formatKey]*decoderEntry{}, rejected: cfg.Rejected,
		log: cfg.Logger, records: map[string]int64{}, errs: map[string]int64{}}
	// Held records of ordered streams are applied first as a bucket closes,
	// before any hook samples the state they change.
	agg.pre.BeforeClose(func(_, end int64, _ obs.Sink) {
		d.held.release(end, d.applyHeld)
	})
	agg.pre.Pending(d.held.earliest)
	d.env = &ingest.Env{Map: cfg.Map, LocalASNs: cfg.LocalASNs, BeforeClose: agg.pre.BeforeClose, Shared: map[string]any{}}
	return d
}

func (d *decodeStage) Name() string { return "decode" }

func (d *decodeStage) entry(stream, format string) (*decoderEntry, error) {
	if e := d.last; e != nil && e.key.stream == stream && e.key.format == format {
		return e, nil
	}
	k := formatKey{stream, format}
	if e, ok := d.decoders[k]; ok {
		d.last = e
		return e, nil
	}
	dec, err := ingest.NewDecoder(stream, format, d.env)
	if err != nil {
		return nil, err
	}
	e := &decoderEntry{key: k, dec: dec, ordered: ingest.Ordered(stream)}
	d.mu.Lock()
	d.decoders[k] = e
	d.mu.Unlock()
	d.last = e
	return e, nil
}

// process decodes rec into the open buckets, or holds it (ordered
// streams); see Pipeline.Process.
func (d *decodeStage) process(rec *ingest.Record) error {
	e, err := d.entry(rec.Stream, rec.Format)
	switch {
	case err != nil:
	case e.ordered:
		d.held.hold(rec)
	default:
		err = e.dec.Decode(rec.Value, d.sink)
	}
	return d.count(e, rec, err, true)
}

// apply decodes rec into the open buckets; received says whether to count
// it as a record in (held records were counted when they arrived).
func (d *decodeStage) apply(rec *ingest.Record, received bool) error {
	e, err := d.entry(rec.Stream, rec.Format)
	if err == nil {
		err = e.dec.Decode(rec.Value, d.sink)
	}
	return d.count(e, rec, err, received)
}

// applyHeld applies a held record; its decode error, counted by apply,
// goes to Config.Rejected, since Process returned long before.
func (d *decodeStage) applyHeld(r *ingest.Record) {
	if err := d.apply(r, false); err != nil && d.rejected != nil {
		d.rejected(r, err)
	}
}

// finish applies every held record without closing a bucket.
func (d *decodeStage) finish() {
	d.held.release(math.MaxInt64, d.applyHeld)
	d.agg.refresh()
}

func (d *decodeStage) count(e *decoderEntry, rec *ingest.Record, err error, received bool) error {
	d.agg.refresh()
	d.mu.Lock()
	defer d.mu.Unlock()
	if e != nil && received {
		e.records++
	}
	if err != nil {
		reason := ingest.Reason(err)
		k := rec.Stream + "/" + reason
		switch {
		case d.errs[k] > 0:
		case reason == ingest.ReasonNoValue:
			d.log.Info("record holds a gap (no value); skipped, and further gaps are only counted",
				"stream", rec.Stream, "format", rec.Format, "topic", rec.Topic, "offset", rec.Offset)
		default:
			d.log.Warn("record does not decode; skipped, and further errors of this kind are only counted",
				"stream", rec.Stream, "format", rec.Format, "topic", rec.Topic, "offset", rec.Offset, "err", err)
		}
		d.errs[k]++
		return fmt.Errorf("%s/%s record: %w", rec.Stream, rec.Format, err)
	}
	return nil
}

// Counters are the records in, "records/STREAM/FORMAT", and the decode
// errors, "errors/STREAM/REASON".
func (d *decodeStage) Counters() map[string]int64 {
	recs, errs := d.counts()
	c := map[string]int64{}
	for k, v := range recs {
		c["records/"+k] = v
	}
	for k, v := range errs {
		c["errors/"+k] = v
	}
	return c
}

// counts returns the records in and the decode errors.
func (d *decodeStage) counts() (records, errs map[string]int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	records = maps.Clone(d.records)
	for k, e := range d.decoders {
		records[k.stream+"/"+k.format] += e.records
	}
	return records, maps.Clone(d.errs)
}

// save writes the decoders built, the decoders' shared state, the held
// records and the counters.
func (d *decodeStage) save(cp *checkpoint) error {
	for k := range d.decoders {
		cp.Formats = append(cp.Formats, k.stream+"/"+k.format)
	}
	slices.Sort(cp.Formats)
	cp.Shared = map[string][]byte{}
	for _, k := range slices.Sorted(maps.Keys(d.env.Shared)) {
		if m, ok := d.env.Shared[k].(encoding.BinaryMarshaler); ok {
			var err error
			if cp.Shared[k], err = m.MarshalBinary(); err != nil {
				return fmt.Errorf("pipeline: checkpoint decoder state %s: %w", k, err)
			}
		}
	}
	cp.Held = d.held.recs
	recs, errs := d.counts()
	cp.Records = recs
	if cp.Errors == nil {
		cp.Errors = map[string]int64{}
	}
	maps.Copy(cp.Errors, errs)
	return nil
}

func (d *decodeStage) restore(cp *checkpoint) error {
	for _, f := range cp.Formats {
		stream, format, _ := strings.Cut(f, "/")
		if _, err := d.entry(stream, format); err != nil {
			return fmt.Errorf("pipeline: restore: %w", err)
		}
	}
	for k, b := range cp.Shared {
		u, ok := d.env.Shared[k].(encoding.BinaryUnmarshaler)
		if !ok {
			return fmt.Errorf("pipeline: restore: no decoder owns state %q", k)
		}
		if err := u.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("pipeline: restore decoder state %s: %w", k, err)
		}
	}
	d.held = held{}
	for _, h := range cp.Held {
		d.held.hold(h.Rec)
	}
	d.mu.Lock()
	d.records, d.errs = map[string]int64{}, map[string]int64{}
	maps.Copy(d.records, cp.Records)
	for k, v := range cp.Errors {
		if !isPartialError(k) {
			d.errs[k] = v
		}
	}
	d.mu.Unlock()
	return nil
}
