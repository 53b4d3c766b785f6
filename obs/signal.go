package obs

import (
	"fmt"
	"sort"
	"time"
)

// Signal identifies a kind of measurement. Signals are small integers so that
// series keys hash fast; their names are what rules, alerts and files use.
type Signal uint16

// Aggregation says how observations within one bucket become one value.
type Aggregation uint8

const (
	// Sum adds values: bytes, packets, queries, withdrawals.
	Sum Aggregation = iota + 1
	// Last keeps the value with the latest event time: gauges such as
	// announced address space or CPU utilisation.
	Last
	// Mean averages values; the mean of a 0/1 indicator is a ratio (DNS
	// failure ratio, packet loss).
	Mean
	// Max keeps the largest value.
	Max
	// Custom uses the signal's NewAccumulator: quantile and distinct-count
	// signals.
	Custom
)

// Accumulator folds the observations of one open bucket of a Custom signal.
// Implementations must be cheap to Reset and reuse: the aggregator pools them.
type Accumulator interface {
	Add(o *Observation)
	// Result is the bucket's value and the number of observations behind it.
	Result() (value float64, count int64)
	Reset()
}

// Feed names the input stream a signal comes from; a feed that sends nothing
// in a bucket makes every signal of it "no data" for that bucket rather than
// zero.
type Feed string

const (
	FeedFlows   Feed = "flows"
	FeedBGP     Feed = "bgp"
	FeedDNS     Feed = "dns"
	FeedQuality Feed = "quality"
	FeedDCLoad  Feed = "dcload"
	FeedObs     Feed = "observations"
)

// SignalDef describes a signal.
type SignalDef struct {
	Name string
	Unit string
	Feed Feed
	Agg  Aggregation
	// ZeroWhenAbsent says that an entity with no observation in a bucket whose
	// feed did deliver data has the value 0 (traffic that stopped) rather than
	// no value (a latency that was not measured).
	ZeroWhenAbsent bool
	// NewAccumulator makes accumulators for Custom signals.
	NewAccumulator func() Accumulator
	// Precision is the relative error the signal's history may carry (half
	// a quantisation step); 0 is the default ±2 %, plenty for traffic whose
	// own noise is ten times that. Signals judged against 1 % thresholds
	// (routing visibility) ask for finer, at more bits a bucket.
	Precision float64
	// History is how much history the signal's series keep; 0 is the
	// aggregator's default (two weeks). Signals whose detectors look back
	// hours, not weeks, keep less, so that a finer precision stays within
	// the same memory per series.
	History time.Duration
}

var (
	defs   = []SignalDef{{}} // index 0 is "no signal"
	byName = map[string]Signal{}
)

// Register adds a signal definition and returns its Signal. Packages register
// their signals from package-level variables, so the set is fixed before main
// runs; registering the same name twice panics, as it is a programming error.
func Register(d SignalDef) Signal {
	if d.Name == "" || d.Agg == 0 || d.Feed == "" {
		panic(fmt.Sprintf("obs.Register: incomplete signal definition %+v", d))
	}
	if d.Agg == Custom && d.NewAccumulator == nil {
		panic("obs.Register: custom signal " + d.Name + " without NewAccumulator")
	}
	if _, dup := byName[d.Name]; dup {
		panic("obs.Register: signal " + d.Name + " registered twice")
	}
	s := Signal(len(defs))
	defs = append(defs, d)
	byName[d.Name] = s
	return s
}

// Def returns the definition of s.
func (s Signal) Def() *SignalDef {
	if int(s) >= len(defs) {
		return &defs[0]
	}
	return &defs[s]
}

// String returns the signal's name.
func (s Signal) String() string {
	if s == 0 || int(s) >= len(defs) {
		return fmt.Sprintf("signal(%d)", uint16(s))
	}
	return defs[s].Name
}

// Lookup returns the signal with the given name.
func Lookup(name string) (Signal, bool) {
	s, ok := byName[name]
	return s, ok
}

// Names returns the names of all registered signals, sorted.
func Names() []string {
	out := make([]string, 0, len(byName))
	for n := range byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// The signals of the core pipeline. Packages that bring other inputs register
// theirs next to their decoders.
var (
	TrafficBytes   = Register(SignalDef{Name: "traffic_bytes", Unit: "bytes", Feed: FeedFlows, Agg: Sum, ZeroWhenAbsent: true})
	TrafficPackets = Register(SignalDef{Name: "traffic_packets", Unit: "packets", Feed: FeedFlows, Agg: Sum, ZeroWhenAbsent: true})
)
