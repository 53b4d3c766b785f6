// Package ingest defines what every input has in common: the Record that a
// source (a Kafka topic, a recorded file, a rendered fixture) hands to the
// pipeline, and the Decoder that turns one record into observations. The
// formats themselves live in sub-packages, one per stream kind.
package ingest

import (
	"errors"
	"fmt"

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
