package alerting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	// Dir is the outbox directory; each sink gets Dir/<sink name>.
	Dir string
	// Outbox applies to every sink's outbox.
	Outbox OutboxConfig
	// RateLimits overrides Outbox.RateLimit per sink name.
	RateLimits map[string]RateLimit
}

// Dispatcher routes events to sinks by Event.Receivers through one
// persisted Outbox per sink, so a slow or dead sink delays only itself.
// Metrics are read with Stats (plain counters; the caller exports them, so
// this package does not depend on Prometheus).
type Dispatcher struct {
	names   []string
	outbox  map[string]*Outbox
	ordered []*Outbox
}

// NewDispatcher opens an outbox per sink under cfg.Dir. Sink names must be
// unique and usable as a directory name (letters, digits, '.', '_', '-').
func NewDispatcher(cfg DispatcherConfig, sinks ...Sink) (*Dispatcher, error) {
	if cfg.Dir == "" {
		return nil, errors.New("alerting: dispatcher: no outbox directory")
	}
	d := &Dispatcher{outbox: make(map[string]*Outbox, len(sinks))}
	for _, s := range sinks {
		name := s.Name()
		if err := validSinkName(name); err != nil {
			d.Close()
			return nil, err
		}
		if _, dup := d.outbox[name]; dup {
			d.Close()
			return nil, fmt.Errorf("alerting: dispatcher: two sinks named %q", name)
		}
		oc := cfg.Outbox
		if rl, ok := cfg.RateLimits[name]; ok {
			oc.RateLimit = rl
		}
		o, err := OpenOutbox(filepath.Join(cfg.Dir, name), s, oc)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.names = append(d.names, name)
		d.outbox[name] = o
		d.ordered = append(d.ordered, o)
	}
	return d, nil
}

func validSinkName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("alerting: dispatcher: bad sink name %q", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("alerting: dispatcher: bad sink name %q: use letters, digits, '.', '_', '-'", name)
		}
	}
	return nil
}

// Sinks returns the sink names in registration order.
func (d *Dispatcher) Sinks() []string { return append([]string(nil), d.names...) }

// Outbox returns the named sink's outbox, or nil.
func (d *Dispatcher) Outbox(name string) *Outbox { return d.outbox[name] }

// Dispatch enqueues ev on the outbox of each receiver it names (all sinks
// when Receivers is empty). An unknown receiver is an error, but the known
// ones still get the event: losing an alert over a typo in one route is
// worse than the error.
//
// A sink that implements Selector gets only what it Wants: Slack and
// webhooks page per outage event, not per member alert.
func (d *Dispatcher) Dispatch(ev *Event) error {
	var errs []error
	if len(ev.Receivers) == 0 {
		for _, o := range d.ordered {
			if !wants(o.sink, ev) {
				continue
			}
			if err := o.Enqueue(ev); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	seen := make(map[string]bool, len(ev.Receivers))
	for _, o := range d.ordered {
		if _, ok := o.sink.(Feed); ok && wants(o.sink, ev) {
			seen[o.sink.Name()] = true
			if err := o.Enqueue(ev); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, r := range ev.Receivers {
		if seen[r] {
			continue
		}
		seen[r] = true
		o := d.outbox[r]
		if o == nil {
			errs = append(errs, fmt.Errorf("alerting: event %s: unknown receiver %q", ev.ID, r))
			continue
		}
		if !wants(o.sink, ev) {
			continue
		}
		if err := o.Enqueue(ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start starts every outbox's background delivery loop.
func (d *Dispatcher) Start() {
	for _, o := range d.ordered {
		o.Start()
	}
}

// Drain delivers everything pending on every sink now, sink by sink in
// registration order (see Outbox.Drain).
func (d *Dispatcher) Drain(ctx context.Context) error {
	var errs []error
	for _, o := range d.ordered {
		if err := o.Drain(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Flush waits for every outbox (see Outbox.Flush).
func (d *Dispatcher) Flush(ctx context.Context) error {
	var errs []error
	for _, o := range d.ordered {
		if err := o.Flush(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every outbox (undelivered events stay on disk), then the
// sinks that hold resources (the Alertmanager refresh loop).
func (d *Dispatcher) Close() error {
	var errs []error
	for _, o := range d.ordered {
		if err := o.Close(); err != nil {
			errs = append(errs, err)
		}
		if c, ok := o.sink.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Stats returns each sink's counters, in registration order.
func (d *Dispatcher) Stats() []SinkStats {
	out := make([]SinkStats, len(d.ordered))
	for i, o := range d.ordered {
		out[i] = o.Stats()
	}
	return out
}

// Feed is implemented by a sink that takes what it Wants whatever the
// event's Receivers say: the feed of an actions process acts on the
// alerts of its rules wherever those rules route their pages.
type Feed interface {
	Selector
	Feed()
}

func wants(s Sink, ev *Event) bool {
	if sel, ok := s.(Selector); ok {
		return sel.Wants(ev)
	}
	return true
}
