// Package ingest defines what every input has in common: the Record that a
// source (a Kafka topic, a recorded file, a rendered fixture) hands to the
// pipeline, and the Decoder that turns one record into observations. The
// formats themselves live in sub-packages, one per stream kind.
package ingest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/outagewatch/outagewatch/netmap"

	"github.com/outagewatch/outagewatch/obs"
)

// Record is one message of an input stream.
type Record struct {
	// Stream is the stream kind ("flows", "bgp", "dns", "quality", "dcload",
	// "observations"); with Format it selects the decoder.
	Stream string
	// Format names the encoding within the stream kind ("goflow2-pb",
	// "goflow2-json", "rislive", "mrt", "bmp", "dnstap", ...).
	Format string
	// Topic, Partition and Offset locate a live record; replayed files keep
	// the values they were recorded with.
	Topic     string
	Partition int32
	Offset    int64
	// Time is the record's event time in Unix nanoseconds: the Kafka
	// timestamp, or the time a file reader found in the record. Replay merges
	// streams in this order.
	Time    int64
	Key     []byte
	Value   []byte
	Headers []Header
}

// Header is a Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Decoder turns the payload of one record into observations. A decoder is
// used by one goroutine at a time and may keep scratch state between calls.
type Decoder interface {
	Decode(value []byte, sink obs.Sink) error
}

// Error is a decode failure with a short machine-readable reason ("json",
// "truncated", "field_type", ...) used as a metric label and as the
// dead-letter header, so that operators can count bad records by cause.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ReasonNoValue is the reason of a record that holds a gap (an empty, NaN
// or null value in an export) rather than a fault: counted like any
// other, but no sign of a broken input.
const ReasonNoValue = "no_value"

// TornError is a file that ends inside a record: an archive still being
// written or downloaded, a capture cut short. The records before it are
// whole; a reader hands them on and returns this at the cut, so that the
// caller can keep them and count the torn one.
type TornError struct {
	// Record is the number (from 0) of the record the file ends in: the
	// count of whole ones before it.
	Record int64
	// Err says where, counting from 1 as a person does.
	Err error
}

func (e *TornError) Error() string { return e.Err.Error() }
func (e *TornError) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given reason.
func Errorf(reason, format string, args ...any) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Reason returns the reason of a decode error, or "other".
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "other"
}

// Env is what decoders of one pipeline share: attribution data, the local
// networks, and a way for stateful inputs to take part in bucket closing.
type Env struct {
	Map       *netmap.Map
	LocalASNs []uint32
	// BeforeClose registers a hook that runs before each bucket closes; the
	// BGP routing table emits its announced-space gauges this way.
	BeforeClose func(h func(start, end int64, sink obs.Sink))
	// Shared keeps per-pipeline singletons (the routing table) by name, so
	// that several formats of one stream kind feed the same state.
	Shared map[string]any
}

var ordered = map[string]bool{}

// RegisterOrdered marks a stream whose records change state that bucket
// closing reads (the BGP routing table, whose announced space is sampled as
// each bucket closes). The pipeline holds such records back and applies each
// just before the first bucket ending after it closes, so a record from a
// partition that runs ahead never leaks its future into an earlier bucket,
// and live and replay sample the same state.
func RegisterOrdered(stream string) { ordered[stream] = true }

// Ordered reports whether stream was registered with RegisterOrdered.
func Ordered(stream string) bool { return ordered[stream] }

// Factory builds a decoder for one pipeline.
type Factory func(env *Env) (Decoder, error)

var formats = map[string]Factory{}

// RegisterFormat makes a decoder available as stream/format. Format
// packages call it from init.
func RegisterFormat(stream, format string, f Factory) {
	k := stream + "/" + format
	if _, dup := formats[k]; dup {
		panic("ingest: format " + k + " registered twice")
	}
	formats[k] = f
}

// NewDecoder builds the decoder registered as stream/format.
func NewDecoder(stream, format string, env *Env) (Decoder, error) {
	f, ok := formats[stream+"/"+format]
	if !ok {
		return nil, fmt.Errorf("ingest: no decoder for stream %q format %q (known: %v)", stream, format, Formats())
	}
	return f(env)
}

// Formats lists the registered stream/format names, sorted.
func Formats() []string {
	out := make([]string, 0, len(formats))
	for k := range formats {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
