package obs

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"sync"
	"sync/atomic"
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

var aggNames = map[Aggregation]string{Sum: "sum", Last: "last", Mean: "mean", Max: "max", Custom: "custom"}

// String returns the aggregation's name as files spell it.
func (a Aggregation) String() string {
	if n, ok := aggNames[a]; ok {
		return n
	}
	return fmt.Sprintf("aggregation(%d)", uint8(a))
}

// ParseAggregation reads sum, mean, max or last.
func ParseAggregation(s string) (Aggregation, error) {
	for a, n := range aggNames {
		if n == s && a != Custom {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown aggregation %q (want sum, mean, max or last)", s)
}

// Accumulator folds the observations of one open bucket of a Custom signal.
// Implementations must be cheap to Reset and reuse: the aggregator pools them.
type Accumulator interface {
	Add(o *Observation)
	// Result is the bucket's value and the number of observations behind it.
	Result() (value float64, count int64)
	Reset()
}

// Mergeable is an Accumulator whose state can leave the process and be
// folded into another of the same kind: the first stage of a scaled-out
// service sends each bucket's partial state per entity, and the second
// merges the partials of every input partition into the bucket's value.
// A merge must give the value that one accumulator fed every observation
// would have given, so that the stages split or together judge the same
// numbers.
type Mergeable interface {
	Accumulator
	// Merge folds other, an accumulator made by the same signal, into this
	// one; other is left as it was.
	Merge(other Accumulator) error
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
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

// Kind says what a signal measures, which decides how it is read: a volume
// (bytes, queries) sums and may fall to zero; a gauge (announced space,
// visible /24s) is a level sampled at its cadence; a ratio lies in [0, 1];
// a distinct count (sources seen, clients) cannot be summed across buckets.
type Kind string

const (
	KindVolume   Kind = "volume"
	KindGauge    Kind = "gauge"
	KindRatio    Kind = "ratio"
	KindDistinct Kind = "distinct"
)

// SignalDef describes a signal.
type SignalDef struct {
	Name string
	Unit string
	Kind Kind
	Feed Feed
	Agg  Aggregation
	// Cadence is how often the source reports a value (ns); 0 means at
	// every bucket of the aggregator. A series whose cadence is coarser
	// than the bucket is bucketed and judged at its own cadence, so an
	// export that reports every 30 minutes is not read as five missing
	// buckets out of six.
	Cadence int64
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
	// Poisson says the value is a count of independent events, or a
	// sample of them (sources a telescope saw, /24s that answered a
	// probe, queries): whatever else moves it, a count of n moves by
	// about √n from one bucket to the next by chance alone, so 1 of 20 is
	// 5 % of noise. Detectors that judge a count against its baseline
	// never take a change inside that spread for news.
	Poisson bool
	// MeanOf is, for a Poisson signal, how many counts each value is the
	// mean of: IODA reports its telescope's one-minute counts of sources
	// as their mean over each 5-minute step, whose sampling noise is
	// √(level/5), not √level. 0 or 1 is a plain count.
	MeanOf float64
	// Declared marks a signal declared in a rules or signals file.
	Declared bool
}

// SamplingVar is the variance a value at level has by chance alone, as
// a Poisson count or the mean of MeanOf of them; 0 for a signal with no
// sampling noise declared. Detectors compare it with the spread their
// window shows and take the larger.
func (d *SignalDef) SamplingVar(level float64) float64 {
	if !d.Poisson || level <= 0 {
		return 0
	}
	return level / max(d.MeanOf, 1)
}

// The registry is read on every observation (Def) and every partial
// entry (Lookup) and written only while signals are registered or
// declared, so readers load an immutable slice and map, without a lock,
// and writers, under mu, publish copies.
var (
	mu     sync.Mutex
	table  = newTable()
	byName atomic.Pointer[map[string]Signal]
)

func names() map[string]Signal {
	if m := byName.Load(); m != nil {
		return *m
	}
	return nil
}

func newTable() *atomic.Pointer[[]SignalDef] {
	var p atomic.Pointer[[]SignalDef]
	t := []SignalDef{{}} // index 0 is "no signal"
	p.Store(&t)
	return &p
}

func defsNow() []SignalDef { return *table.Load() }

// add appends d under mu and returns its Signal.
func add(d SignalDef) Signal {
	old := defsNow()
	t := make([]SignalDef, len(old), len(old)+1)
	copy(t, old)
	t = append(t, d)
	s := Signal(len(old))
	m := maps.Clone(names())
	if m == nil {
		m = map[string]Signal{}
	}
	m[d.Name] = s
	table.Store(&t)
	byName.Store(&m)
	return s
}

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
	mu.Lock()
	defer mu.Unlock()
	if _, dup := names()[d.Name]; dup {
		panic("obs.Register: signal " + d.Name + " registered twice")
	}
	return add(d)
}

// Declare registers a signal that an operator declared (in a rules or
// signals file) rather than one built into a decoder. Declaring the same
// definition again returns the same Signal, so a rules file can be loaded
// twice (a reload, two rule sets compared); a different definition under a
// name already taken, built in or declared, is an error, since series of
// one name must mean one thing.
func Declare(d SignalDef) (Signal, error) {
	switch {
	case d.Name == "":
		return 0, fmt.Errorf("signal without a name")
	case d.Agg == 0 || d.Agg == Custom:
		return 0, fmt.Errorf("signal %s: want an aggregation of sum, mean, max or last", d.Name)
	case d.Feed == "":
		return 0, fmt.Errorf("signal %s: no feed", d.Name)
	case d.Cadence < 0:
		return 0, fmt.Errorf("signal %s: negative cadence", d.Name)
	}
	d.Declared = true
	mu.Lock()
	defer mu.Unlock()
	if s, ok := names()[d.Name]; ok {
		old := defsNow()[s]
		if !old.Declared {
			return 0, fmt.Errorf("signal %s is built in (%s, feed %s): declare another name", d.Name, old.Unit, old.Feed)
		}
		if old.Unit != d.Unit || old.Kind != d.Kind || old.Feed != d.Feed || old.Agg != d.Agg ||
			old.Cadence != d.Cadence || old.ZeroWhenAbsent != d.ZeroWhenAbsent || old.Precision != d.Precision ||
			old.Poisson != d.Poisson || old.MeanOf != d.MeanOf {
			return 0, fmt.Errorf("signal %s already declared differently (unit %q, kind %s, feed %s, %s, cadence %ds, missing_is_zero %v, precision %g, poisson %v, mean of %g)",
				d.Name, old.Unit, old.Kind, old.Feed, old.Agg, old.Cadence/1e9, old.ZeroWhenAbsent, old.Precision, old.Poisson, max(old.MeanOf, 1))
		}
		return s, nil
	}
	if len(defsNow()) >= math.MaxUint16 {
		return 0, fmt.Errorf("signal %s: too many signals declared", d.Name)
	}
	return add(d), nil
}

// Def returns the definition of s.
func (s Signal) Def() *SignalDef {
	t := defsNow()
	if int(s) >= len(t) {
		return &t[0]
	}
	return &t[s]
}

// String returns the signal's name.
func (s Signal) String() string {
	t := defsNow()
	if s == 0 || int(s) >= len(t) {
		return fmt.Sprintf("signal(%d)", uint16(s))
	}
	return t[s].Name
}

// Lookup returns the signal with the given name.
func Lookup(name string) (Signal, bool) {
	s, ok := names()[name]
	return s, ok
}

// Names returns the names of all registered signals, sorted.
func Names() []string {
	m := names()
	out := make([]string, 0, len(m))
	for n := range m {
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

// FeedCadence is the cadence at which a feed reports when every signal of
// it declares one (the shortest of them), else 0: feed health then learns
// the feed's rhythm from the data instead.
func FeedCadence(f Feed) int64 {
	var c int64
	for _, d := range defsNow()[1:] {
		if d.Feed != f {
			continue
		}
		if d.Cadence <= 0 {
			return 0
		}
		if c == 0 || d.Cadence < c {
			c = d.Cadence
		}
	}
	return c
}
