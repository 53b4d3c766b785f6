// Package aggregate turns a stream of observations into fixed event-time
// buckets per (signal, entity). A bucket stays open until the watermark
// passes its end, so late records within the allowed lateness still count;
// only closed buckets reach detectors, and each closed bucket is written to
// the series' compact history.
//
// Missing is not zero: when a feed delivered nothing at all in a bucket, its
// series get "no data" for that bucket, never a zero that would look like an
// outage. When the feed did deliver, an entity that sent nothing on a signal
// that counts traffic is a real zero.
//
// Judged at the source's cadence: a signal that declares a cadence coarser
// than the bucket has buckets of that width (see Closed), and a series
// that shows a coarser step by itself (a 30-minute export) skips the
// buckets between its reports rather than reading them as zero or missing.
package aggregate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/series"
)

// Defaults. Lateness defaults to none: replay feeds records in event-time
// order, and the live service sets its own (`lateness` in its config).
const (
	DefaultWidth   = int64(300e9) // 5 minutes
	DefaultHistory = 4032         // two weeks of 5-minute buckets
)

// Config sets the bucket width, the allowed lateness and how many buckets of
// history each series keeps.
type Config struct {
	Width    int64 // ns
	Lateness int64 // ns
	History  int   // buckets
	// StageOne makes a stage-one aggregator: it only pre-aggregates, so
	// its series keep their open buckets and no history, and its buckets
	// leave through Flush or Handoff, never Advance. Such a series takes
	// 64 bytes instead of a Series' 176, which matters because stage one
	// holds every series that stage two does.
	StageOne bool
}

func (c *Config) defaults() {
	if c.Width <= 0 {
		c.Width = DefaultWidth
	}
	if c.History <= 0 {
		c.History = DefaultHistory
	}
	if c.Lateness < 0 {
		c.Lateness = 0
	}
}

// Key identifies a series.
type Key struct {
	Signal obs.Signal
	Entity string
}

func (k Key) String() string { return k.Signal.String() + "{" + k.Entity + "}" }

// Series is the state of one (signal, entity): its open buckets and history.
type Series struct {
	Key
	Hist series.Ring
	window
	// The series' own rhythm, detected from the buckets it had data in:
	// lastData is the start of the latest, step the greatest common divisor
	// of the gaps between them (every gap is a multiple of it).
	lastData, step int64
	// id is the series' dense number in its aggregator: 0, 1, 2… in the
	// order the series appeared.
	id int32
	// spacingSum and spacingN are the sum (in buckets) and count of the
	// gaps between readings that Spacing averages.
	spacingSum int32
	// The rhythm of the series' values (see held), in buckets: changeAge
	// is how long before lastData the latest change of value came,
	// valueHash that value's bits folded to 32, changeStep the latest gap
	// between changes and changes how many in a row it was (up to
	// heldChanges).
	changeAge  int32
	valueHash  uint32
	spacingN   int16
	changeStep int16
	changes    int8
	// gaps is how many gaps were seen, up to minGaps.
	gaps int8
	// bootGap is the longest of the first minGaps gaps between readings,
	// in buckets (0 before the first): the series' rhythm until Spacing
	// has a mean of its own. The longest, as a pair of readings a bucket
	// apart must not make every later gap look like a silence; a silence
	// among them is soon outweighed by the readings' own gaps.
	bootGap int16
}

// ID is the series' dense number in its aggregator (0, 1, 2… in the order
// series appeared), so that per-series state can live in a slice indexed
// by it instead of a map keyed by name. Series of different aggregators
// share numbers: a slice indexed by ID must check whose series it holds.
func (s *Series) ID() int { return int(s.id) }

// minGaps is how many gaps between buckets with data a series must show
// before its step is trusted to skip buckets that were not due.
const minGaps = 3

// due reports whether a value was due in the bucket starting at start,
// which has no data: always, unless the series has shown a step coarser
// than the bucket (a 30-minute export replayed without a declared cadence)
// and start is off that step. A bucket that was not due is not a missing
// value, and never a zero.
func (s *Series) due(start int64) bool {
	w := s.Hist.Width()
	if s.gaps < minGaps || s.step <= w || s.lastData == 0 {
		return true
	}
	return (start-s.lastData)%s.step == 0
}

// Step is how often the series reports (ns): its bucket width (the
// aggregator's, or its signal's declared cadence), or the coarser step it
// has shown by itself. Closed points of a detected step arrive once per
// step, so a detector that counts points to measure a duration should
// count Step, not the bucket width.
func (s *Series) Step() int64 {
	if w := s.Hist.Width(); s.gaps < minGaps || s.step <= w {
		return w
	}
	return s.step
}

// heldChanges is how many changes in a row at the same gap make a grid
// of a series' values (see held): enough that a small count, whose
// value repeats by chance, does not make one. A count that repeats half
// its buckets at random changes at every second bucket twelve times in a
// row with odds of 4^-12, one in 17 million.
const heldChanges = 12

// held reports whether the bucket at start, of value v, repeats the
// series' last reading off the grid its values change on: an export that
// repeats a 30-minute value on every 5-minute row, as IODA's holds
// Google's traffic, changes only every 30 minutes, and its repeats are
// not readings. Counted as readings, one value was two 15-minute buckets
// of a rule's `for` and two residuals of a forecast's noise, as sure as
// two independent ones: simulated regions whose night traffic swings by
// a third or a half, exported so, paged 4 times in 40 runs at 30 minutes
// and 12 at an hour, and none at their own step
// (TestTrafficDropQuietOnNoisyNights). The grid is the gap between
// changes of value once heldChanges gaps in a row have been that gap: a
// series that changes at every bucket (any noisy one) keeps every
// bucket, and so does a flat gauge whose changes come at irregular
// times. A change is always a reading, so a drop is never held back, and
// a change off the grid starts the count again.
func (s *Series) held(start int64, v float64) bool {
	b := math.Float64bits(v)
	h := uint32(b) ^ uint32(b>>32)
	if s.lastData == 0 || start <= s.lastData {
		s.changeAge, s.valueHash = 0, h
		return false
	}
	// Buckets since the latest change; lastData becomes start unless the
	// bucket is held.
	since := int64(s.changeAge) + (start-s.lastData)/s.Hist.Width()
	if h == s.valueHash {
		if s.changes >= heldChanges && s.changeStep > 1 && since%int64(s.changeStep) != 0 {
			return true
		}
		s.changeAge = int32(min(since, math.MaxInt32))
		return false
	}
	if since == int64(s.changeStep) {
		s.changes = min(s.changes+1, heldChanges)
	} else {
		s.changeStep, s.changes = int16(min(since, math.MaxInt16)), 1
	}
	s.changeAge, s.valueHash = 0, h
	return false
}

// Spacing is the mean time between the series' readings (ns), at least
// Step: what a reading stands for when readings are counted as time (a
// rule's min_history, its for). It differs from Step where the readings
// do not fall on a grid of the series' own: a 15-minute export of a
// signal bucketed every 10 minutes lands 10 and 20 minutes apart, so its
// step is 10 minutes and one bucket in three is empty, and counted at its
// step a day of it would be 16 hours. A gap of more than twice the
// series' rhythm (two readings missed in a row) is the feed's silence,
// not its rhythm, and is left out; the rhythm is the mean gap so far (at
// first the longest of the first gaps), never under the step. Against
// the step alone, a RIPE Atlas ping every 16 minutes on 5-minute buckets,
// landing 15 and 20 minutes apart, a step of 5 minutes, had every gap
// left out; against the shortest gap seen, one pair of readings a bucket
// apart did the same.
func (s *Series) Spacing() int64 {
	st := s.Step()
	if s.spacingN == 0 {
		return st
	}
	return max(st, int64(s.spacingSum)*s.Hist.Width()/int64(s.spacingN))
}

// sawData records that the bucket starting at start had data.
func (s *Series) sawData(start int64) {
	if s.lastData != 0 && start > s.lastData {
		g, w := start-s.lastData, s.Hist.Width()
		if s.gaps < minGaps {
			s.bootGap = max(s.bootGap, int16(min(g/w, math.MaxInt16)))
		}
		// The rhythm a gap is judged against: the mean gap once there is
		// one, the longest of the first few before; never under the step.
		rhythm := int64(s.bootGap) * w
		if s.spacingN > 0 {
			rhythm = int64(s.spacingSum) * w / int64(s.spacingN)
		}
		if s.gaps >= minGaps && g <= 2*max(s.step, rhythm) {
			if s.spacingN == 1<<14 {
				// Halved, the mean stays and newer gaps weigh more.
				s.spacingSum, s.spacingN = s.spacingSum/2, s.spacingN/2
			}
			s.spacingSum += int32(g / s.Hist.Width())
			s.spacingN++
		}
		if s.step == 0 {
			s.step = g
		} else {
			for g != 0 {
				s.step, g = g, s.step%g
			}
		}
		if s.gaps < minGaps {
			s.gaps++
		}
	}
	s.lastData = start
}

// openBucket is one open bucket; its start is its place in the series'
// window. A slot no longer in use keeps its accumulator (custom signals),
// so that the next bucket opened there reuses it.
type openBucket struct {
	sum   float64
	count int64
	lastT int64
	acc   obs.Accumulator
	used  bool
}

// Point is the value of one series in one closed bucket.
type Point struct {
	Series *Series
	Value  float64 // NaN when Missing
	Count  int64   // observations behind the value
	// Missing says the bucket has no value: the feed sent nothing, or the
	// signal is not one where absence means zero.
	Missing bool
}

// Closed is everything that one bucket produced, in a stable order (by
// signal, then entity), so that detectors and alerts are deterministic.
//
// Series of signals with a cadence coarser than the aggregator's width
// (declared in the signal) are bucketed at their cadence: when the
// watermark passes the end of one of their buckets, they arrive in a Closed
// of their own, after the base bucket with the same End, with Start = End −
// cadence and Coarse set. Detectors read the bucket width as End − Start,
// so a 30-minute series is judged every 30 minutes against a history kept
// at 30 minutes, and its empty 5-minute slots are never read as missing.
type Closed struct {
	Start, End int64
	Points     []Point
	// FeedObservations counts the observations each feed contributed to the
	// bucket (for a coarse bucket, over its whole span); a feed absent here
	// sent nothing.
	FeedObservations map[obs.Feed]int64
	// Coarse marks the bucket of series with a coarser cadence. Feed health
	// reads only the base buckets.
	Coarse bool
}

// Stats are the aggregator's counters.
type Stats struct {
	Observations  int64
	Late          int64 // dropped: their bucket had already closed
	BucketsClosed int64
	Series        int
}

// Aggregator buckets observations. It is not safe for concurrent use; the
// pipeline owns one per stage.
type Aggregator struct {
	cfg Config
	// flushed is Flush's entries array, reused from bucket to bucket.
	flushed []partial.Entry
	series  index[*Series]
	sorted  []*Series
	dirty   bool
	// byID holds the series numbered for a decoder (SeriesID), by number.
	byID []*Series
	// parts, sortedParts and partByID are series, sorted list and byID of a
	// stage-one aggregator, whose series are parts instead.
	parts       index[*part]
	sortedParts []*part
	partByID    []*part
	// due lists, by the base bucket whose flush takes them, the parts
	// with a bucket open there, so that a flush visits the series with
	// data in it rather than every series the partition ever had: a
	// sparse partition holds thousands of series and a dozen records a
	// bucket. A nil list stands for all of them: where a quarter of the
	// series or more have data in a bucket (dueDense, as the last flush
	// found), a list would cost a pointer a series and save nothing.
	// dueFree keeps emptied small lists for reuse.
	due      map[int64][]*part
	dueDense bool
	dueFree  [][]*part
	// allAt is a start whose list is all the parts (allOK), so that the
	// records of a dense bucket pass markDue without a map look-up.
	allAt int64
	allOK bool
	// dst is the stage-two aggregator that Handoff last merged into, as it
	// was after its restores'th restore: the parts' dst pointers point into
	// it. restores counts this aggregator's own restores, each of which
	// makes new series.
	dst         *Aggregator
	dstRestores int
	restores    int
	// openStarts lists bucket starts with open data, ascending; feeds counts
	// per open bucket.
	feeds map[int64]*feedCounts
	// closedTo is the end of the last closed bucket: observations before it
	// are late.
	closedTo int64
	// hooks run before a bucket closes, so that stateful inputs (the BGP
	// table) can emit the gauges of that bucket.
	hooks   []func(start, end int64, sink obs.Sink)
	pending func() (int64, bool)
	stats   Stats
	// cache maps (signal, entity string) to series without hashing the
	// entity: decoders take entity names from their own caches, so the same
	// name arrives as the same string data again and again.
	cache [cacheSize]cacheEntry
	// starts lists the keys of feeds in order, so that advancing the
	// watermark and closing need not walk the open buckets.
	starts []int64
	// lastStart and lastFeeds cache the feed counts of the bucket last
	// observed into.
	lastStart int64
	lastFeeds *feedCounts
	// slab is where new series take their history storage from: one
	// allocation for many rings, so no ring is rounded up to a size class.
	slab []byte
	// coarse lists the bucket widths of coarse series, ascending; recent
	// keeps the feed counts of the base buckets that the widest of them
	// spans, so that a coarse bucket knows which feeds delivered in it.
	coarse []int64
	recent []closedFeeds
}

type closedFeeds struct {
	start int64
	feeds map[obs.Feed]int64
}

// WidthOf returns the bucket width of a signal's series: the aggregator's
// width, or the signal's declared cadence rounded up to a whole number of
// those, so that every coarse bucket ends where a base bucket ends.
func (a *Aggregator) WidthOf(sig obs.Signal) int64 {
	w := a.cfg.Width
	if c := sig.Def().Cadence; c > w {
		return (c + w - 1) / w * w
	}
	return w
}

const cacheSize = 1024

type cacheEntry struct {
	sig obs.Signal
	ent string // keeps the string data alive, so its address stays its own
	s   *Series
	p   *part // of a stage-one aggregator
}

// cached returns the direct-mapped cache's slot for (sig, entity), and
// whether it holds that entity: a hit compares the entity's address, not
// its bytes.
func (a *Aggregator) cached(sig obs.Signal, entity string) (*cacheEntry, bool) {
	p := unsafe.StringData(entity)
	h := (uintptr(unsafe.Pointer(p))>>3 ^ uintptr(sig)*0x9e37) % cacheSize
	c := &a.cache[h]
	return c, c.sig == sig && unsafe.StringData(c.ent) == p && len(c.ent) == len(entity)
}

// lookup returns the series of (sig, entity), creating it: from the
// cache, else from the index.
func (a *Aggregator) lookup(sig obs.Signal, entity string) *Series {
	c, hit := a.cached(sig, entity)
	if hit && c.s != nil {
		return c.s
	}
	s := a.series.get(sig, entity)
	if s == nil {
		s = a.newSeries(Key{sig, entity})
	}
	*c = cacheEntry{sig: sig, ent: entity, s: s}
	return s
}

// lookupPart is lookup for a stage-one aggregator.
func (a *Aggregator) lookupPart(sig obs.Signal, entity string) *part {
	c, hit := a.cached(sig, entity)
	if hit && c.p != nil {
		return c.p
	}
	p := a.parts.get(sig, entity)
	if p == nil {
		p = a.newPart(sig, entity)
	}
	*c = cacheEntry{sig: sig, ent: entity, p: p}
	return p
}

// count is the number of series.
func (a *Aggregator) count() int { return a.series.len() + a.parts.len() }

// feedCounts counts one open bucket's observations per feed. Feeds are a
// handful, so a short list beats a map on the per-observation path.
type feedCounts struct {
	feeds []obs.Feed
	n     []int64
}

func (f *feedCounts) add(feed obs.Feed, n int64) {
	for i, x := range f.feeds {
		if x == feed {
			f.n[i] += n
			return
		}
	}
	f.feeds = append(f.feeds, feed)
	f.n = append(f.n, n)
}

// counts returns the counts as a map (nil-safe).
func (f *feedCounts) counts() map[obs.Feed]int64 {
	m := map[obs.Feed]int64{}
	if f != nil {
		for i, x := range f.feeds {
			if f.n[i] > 0 {
				m[x] = f.n[i]
			}
		}
	}
	return m
}

// removeStart forgets a closed bucket start. Buckets close oldest first,
// so the first is cut off by reslicing: deleting it would move every
// later start, once per bucket closed.
func (a *Aggregator) removeStart(start int64) {
	if len(a.starts) > 0 && a.starts[0] == start {
		a.starts = a.starts[1:]
		return
	}
	if i, ok := slices.BinarySearch(a.starts, start); ok {
		a.starts = slices.Delete(a.starts, i, i+1)
	}
}

// addStart records a newly opened bucket start.
func (a *Aggregator) addStart(start int64) {
	if n := len(a.starts); n == 0 || a.starts[n-1] < start {
		a.starts = append(a.starts, start)
		return
	}
	if i, ok := slices.BinarySearch(a.starts, start); !ok {
		a.starts = slices.Insert(a.starts, i, start)
	}
}

// slabSeries is how many series' history one slab allocation holds.
const slabSeries = 64

// New returns an aggregator.
func New(cfg Config) *Aggregator {
	cfg.defaults()
	return &Aggregator{cfg: cfg, feeds: map[int64]*feedCounts{}}
}

// Config returns the effective configuration.
func (a *Aggregator) Config() Config { return a.cfg }

// Stats returns the counters.
func (a *Aggregator) Stats() Stats {
	s := a.stats
	s.Series = a.count()
	return s
}

// BeforeClose registers a hook that runs before each bucket closes.
func (a *Aggregator) BeforeClose(h func(start, end int64, sink obs.Sink)) {
	a.hooks = append(a.hooks, h)
}

// Pending registers a function that reports the earliest event time of
// input held back outside the aggregator (records of ordered streams), so
// that their buckets close, and their BeforeClose hooks run, even when no
// other input opened them.
func (a *Aggregator) Pending(f func() (int64, bool)) { a.pending = f }

// ClosedTo returns the end of the last closed bucket.
func (a *Aggregator) ClosedTo() int64 { return a.closedTo }

// Series returns the series for k, or nil.
func (a *Aggregator) Series(k Key) *Series { return a.series.get(k.Signal, k.Entity) }

// Observe adds one observation to its open bucket.
func (a *Aggregator) Observe(o *obs.Observation) { a.observe(o, true) }

// observe adds o; fromFeed is false for observations that hooks derive from
// state (gauges), which must not make a silent feed look alive.
func (a *Aggregator) observe(o *obs.Observation, fromFeed bool) {
	a.stats.Observations++
	if o.Time < a.closedTo {
		a.stats.Late++
		return
	}
	if a.cfg.StageOne {
		a.addPart(a.lookupPart(o.Signal, o.Entity), o.Time, o.Value, o, fromFeed)
		return
	}
	s := a.lookup(o.Signal, o.Entity)
	a.add(&s.window, s.Signal, s.Hist.Width(), o.Time, o.Value, o, fromFeed)
}

// addPart is add for a stage-one part: a bucket it opens is due at the
// flush of the base bucket that ends with it.
func (a *Aggregator) addPart(p *part, t int64, v float64, o *obs.Observation, fromFeed bool) {
	w := a.WidthOf(p.sig)
	if a.add(&p.window, p.sig, w, t, v, o, fromFeed) {
		a.markDue(p, a.baseEnding(t-t%w, w))
	}
}

// markDue lists p among the parts the flush of the base bucket at start
// takes a bucket from.
func (a *Aggregator) markDue(p *part, start int64) {
	if a.allOK && a.allAt == start {
		return
	}
	l, ok := a.due[start]
	switch {
	case ok && l == nil:
		a.allAt, a.allOK = start, true
		return // all of them
	case a.due == nil:
		a.due = map[int64][]*part{}
	}
	if !ok {
		if a.dueDense {
			a.due[start], a.allAt, a.allOK = nil, start, true
			return
		}
		if n := len(a.dueFree); n > 0 {
			l, a.dueFree = a.dueFree[n-1], a.dueFree[:n-1]
		}
	}
	if l = append(l, p); isDense(len(l), len(a.sortedParts)) {
		l = nil
	}
	a.due[start] = l
}

// isDense tells whether n parts of all are enough of them that visiting
// every part in its sorted order is cheaper than sorting the n.
func isDense(n, all int) bool { return 4*n >= all }

// maxDueFree is the longest list kept for reuse, so that a partition
// that was dense once does not hold a list as long as its series.
const maxDueFree = 4096

// add adds value v at time t to the open buckets of a series of signal
// sig and bucket width w, past the lateness check; o is the observation,
// which only a custom signal's accumulator reads. It reports whether the
// value opened its bucket.
func (a *Aggregator) add(s *window, sig obs.Signal, w int64, t int64, v float64, o *obs.Observation, fromFeed bool) (opened bool) {
	start := t - t%a.cfg.Width
	sstart := start
	if w != a.cfg.Width {
		sstart = t - t%w
	}
	b := s.at(sstart, w)
	if b == nil {
		b, opened = s.openAt(sstart, w, sig), true
	}
	if a.lastFeeds == nil || a.lastStart != start {
		f := a.feeds[start]
		if f == nil {
			f = &feedCounts{}
			a.feeds[start] = f
			a.addStart(start)
		}
		a.lastStart, a.lastFeeds = start, f
	}
	def := sig.Def()
	if fromFeed {
		a.lastFeeds.add(def.Feed, 1)
	}
	switch def.Agg {
	case obs.Sum:
		b.sum += v
	case obs.Mean:
		b.sum += v
	case obs.Max:
		if b.count == 0 || v > b.sum {
			b.sum = v
		}
	case obs.Last:
		if b.count == 0 || t >= b.lastT {
			b.sum, b.lastT = v, t
		}
	case obs.Custom:
		b.acc.Add(o)
	}
	b.count++
	return opened
}

// noteWidth returns sig's bucket width, and keeps a coarser one among the
// widths whose buckets close.
func (a *Aggregator) noteWidth(sig obs.Signal) int64 {
	w := a.WidthOf(sig)
	if w != a.cfg.Width {
		if i, ok := slices.BinarySearch(a.coarse, w); !ok {
			a.coarse = slices.Insert(a.coarse, i, w)
		}
	}
	return w
}

func (a *Aggregator) newSeries(k Key) *Series {
	s := &Series{Key: k}
	w := a.noteWidth(k.Signal)
	def := k.Signal.Def()
	n := a.cfg.History
	if def.History > 0 {
		n = max(1, int(int64(def.History)/w))
	}
	if f := series.FormatFor(def.Precision); f != series.Default || n != a.cfg.History {
		// A signal with a history of its own: rare enough to allocate.
		s.Hist.Init(f, make([]byte, f.RingBytes(n, w)), n, w)
	} else {
		need := series.Default.RingBytes(n, w)
		if len(a.slab) < need {
			a.slab = make([]byte, need*slabSeries)
		}
		s.Hist.Init(series.Default, a.slab[:need:need], n, w)
		a.slab = a.slab[need:]
	}
	s.id = int32(a.series.len())
	a.series.put(s)
	a.sorted = append(a.sorted, s)
	a.dirty = true
	return s
}

// window holds a series' open buckets as a dense window: open[i] is the
// bucket starting at openBase + i×width, in use when used is set. A lagging
// partition can keep hours of buckets open; finding, opening and closing
// one stays O(1) however many there are. The width is the series' own,
// which its owner knows, so the window does not keep it.
type window struct {
	open     []openBucket
	openBase int64
}

// bucket returns the open bucket starting at start, or nil.
func (s *Series) bucket(start int64) *openBucket { return s.at(start, s.Hist.Width()) }

// at returns the open bucket of width w starting at start, or nil.
func (s *window) at(start, w int64) *openBucket {
	if i := int((start - s.openBase) / w); start >= s.openBase && i < len(s.open) && s.open[i].used {
		return &s.open[i]
	}
	return nil
}

// openAt opens the bucket of width w starting at start, which is not open.
func (s *window) openAt(start, w int64, sig obs.Signal) *openBucket {
	switch {
	case len(s.open) == 0:
		s.openBase = start
		s.open = s.open[:0]
	case start < s.openBase:
		// Older than every open bucket (a late record within lateness):
		// grow the window at the front.
		n := int((s.openBase - start) / w)
		s.open = append(make([]openBucket, n, n+len(s.open)), s.open...)
		s.openBase = start
	}
	i := int((start - s.openBase) / w)
	if i >= len(s.open) {
		// Slots past the length were used before and closed, each with its
		// accumulator; past the capacity the window grows in one step, not
		// a slot at a time: a sparse series may open a bucket hours of
		// open buckets after its last.
		if i >= cap(s.open) {
			s.open = slices.Grow(s.open[:cap(s.open)], i+1-cap(s.open))
		}
		s.open = s.open[:i+1]
	}
	acc := s.open[i].acc
	if acc == nil && sig.Def().Agg == obs.Custom {
		acc = sig.Def().NewAccumulator()
	}
	if acc != nil {
		acc.Reset()
	}
	s.open[i] = openBucket{acc: acc, used: true}
	return &s.open[i]
}

// take removes the open bucket starting at start and returns its value.
func (s *Series) take(start int64) (value float64, count int64, ok bool) {
	b := s.bucket(start)
	if b == nil {
		return math.NaN(), 0, false
	}
	switch s.Signal.Def().Agg {
	case obs.Mean:
		value, count = b.sum/float64(b.count), b.count
	case obs.Custom:
		value, count = b.acc.Result()
	default:
		value, count = b.sum, b.count
	}
	s.drop(b, s.Hist.Width())
	return value, count, true
}

// drop closes the open bucket b, one of the window's buckets of width w.
func (s *window) drop(b *openBucket, w int64) {
	*b = openBucket{acc: b.acc}
	// Buckets close oldest first: drop closed slots from the front. When
	// none is left open, keep the slots where they are, so that the next
	// bucket reuses them with their accumulators. When a few are (the next
	// bucket opened before the watermark passed this one), swap them to the
	// front rather than slice past the closed ones: that would give up
	// capacity, and every bucket would then grow a new slice. A long window
	// is sliced, so that closing stays O(1).
	k := 0
	for k < len(s.open) && !s.open[k].used {
		k++
	}
	switch {
	case k == 0:
	case k == len(s.open):
		s.open = s.open[:0]
	case len(s.open)-k <= maxShift:
		// Every slot from n on is then a closed one, kept for its
		// accumulator.
		n := len(s.open) - k
		for j := range n {
			s.open[j], s.open[k+j] = s.open[k+j], s.open[j]
		}
		s.open = s.open[:n]
		s.openBase += int64(k) * w
	default:
		s.open = s.open[k:]
		s.openBase += int64(k) * w
	}
}

// maxShift is how many open buckets take moves to the front of the window.
const maxShift = 8

// Advance moves the watermark to wm (event time, Unix ns): every bucket
// that ends at or before wm closes, oldest first, and fn receives each.
// The first call only sets where closing starts.
func (a *Aggregator) Advance(wm int64, fn func(*Closed)) {
	if a.cfg.StageOne {
		panic("aggregate: Advance of a stage-one aggregator, whose buckets leave through Flush or Handoff")
	}
	for {
		start, ok := a.nextToClose(wm)
		if !ok {
			return
		}
		a.close(start, fn)
	}
}

// nextToClose returns the oldest bucket that wm has passed: the oldest open
// one, or, while history exists, the one after the last closed, so that a
// bucket in which no feed sent anything still closes (as missing).
func (a *Aggregator) nextToClose(wm int64) (int64, bool) {
	w := a.cfg.Width
	next := int64(math.MaxInt64)
	if len(a.starts) > 0 {
		next = a.starts[0]
	}
	if a.pending != nil {
		if t, ok := a.pending(); ok {
			next = min(next, max(t-t%w, a.closedTo))
		}
	}
	if a.closedTo != 0 && a.count() > 0 {
		next = min(next, a.closedTo)
	}
	if next == math.MaxInt64 || next+w > wm {
		return 0, false
	}
	return next, true
}

// runHooks runs the BeforeClose hooks of the bucket [start, end); what
// they observe is stamped inside it and does not count as feed data.
func (a *Aggregator) runHooks(start, end int64) {
	for _, h := range a.hooks {
		h(start, end, obs.SinkFunc(func(o *obs.Observation) {
			o2 := *o
			if o2.Time < start || o2.Time >= end {
				o2.Time = end - 1
			}
			a.observe(&o2, false)
		}))
	}
}

func (a *Aggregator) close(start int64, fn func(*Closed)) {
	end := start + a.cfg.Width
	a.runHooks(start, end)
	if a.dirty {
		slices.SortFunc(a.sorted, func(x, y *Series) int {
			return cmp.Or(cmp.Compare(x.Signal, y.Signal), cmp.Compare(x.Entity, y.Entity))
		})
		a.dirty = false
	}
	feeds := a.feeds[start].counts()
	delete(a.feeds, start)
	if a.lastStart == start {
		a.lastFeeds = nil
	}
	a.removeStart(start)
	c := &Closed{Start: start, End: end, FeedObservations: feeds, Points: make([]Point, 0, len(a.sorted))}
	var coarse []*Closed
	if len(a.coarse) > 0 {
		coarse = a.coarseBuckets(start, end, feeds)
	}
	for _, s := range a.sorted {
		cl := c
		if w := s.Hist.Width(); w != a.cfg.Width {
			if end%w != 0 {
				continue // its bucket is still open
			}
			cl = coarse[slices.Index(a.coarse, w)]
		}
		p, ok := s.point(cl.Start, cl.FeedObservations)
		if ok {
			cl.Points = append(cl.Points, p)
		}
	}
	a.closedTo = end
	a.stats.BucketsClosed++
	for _, cl := range append([]*Closed{c}, coarse...) {
		if cl == nil || (cl.Coarse && len(cl.Points) == 0) {
			continue
		}
		if fn != nil {
			fn(cl)
		}
		// Store after the callback, so that detectors read the history up
		// to the previous bucket and can substitute a prediction (Store)
		// for an outlier.
		for _, p := range cl.Points {
			if p.Series.Hist.Last() < cl.Start {
				p.Series.Hist.Put(cl.Start, p.Value)
			}
		}
	}
}

// point takes the series' bucket starting at start as a Point; ok is false
// when the bucket had no data and none was due (or the series has had
// none yet), or held a value repeated off the series' own grid (held).
func (s *Series) point(start int64, feeds map[obs.Feed]int64) (p Point, ok bool) {
	v, n, had := s.take(start)
	p = Point{Series: s, Value: v, Count: n}
	if had {
		if s.held(start, v) {
			return p, false
		}
		s.sawData(start)
		return p, true
	}
	// A series is born with its first data: a bucket before it is no
	// missing value. It can be open when the series is born (a record of
	// a later bucket, read before an earlier one closes; a stage-two task
	// merging several buckets' partials before it closes them), and
	// counted missing it would put a gap of the series' age in its
	// history that depends on when the buckets were closed.
	if s.lastData == 0 || !s.due(start) {
		return p, false
	}
	def := s.Signal.Def()
	if def.ZeroWhenAbsent && feeds[def.Feed] > 0 {
		p.Value = 0
	} else {
		p.Value, p.Missing = math.NaN(), true
	}
	return p, true
}

// coarseBuckets remembers the feed counts of the base bucket closing now
// and returns, for each coarse width, the bucket that ends with it (nil for
// widths whose bucket does not end here), with the feed counts of its span.
func (a *Aggregator) coarseBuckets(start, end int64, feeds map[obs.Feed]int64) []*Closed {
	widest := a.coarse[len(a.coarse)-1]
	a.recent = append(a.recent, closedFeeds{start, feeds})
	i := 0
	for i < len(a.recent) && a.recent[i].start < end-widest {
		i++
	}
	a.recent = a.recent[i:]
	out := make([]*Closed, len(a.coarse))
	for k, w := range a.coarse {
		if end%w != 0 {
			continue
		}
		cl := &Closed{Start: end - w, End: end, Coarse: true, FeedObservations: map[obs.Feed]int64{}}
		for _, r := range a.recent {
			if r.start >= cl.Start {
				for f, n := range r.feeds {
					cl.FeedObservations[f] += n
				}
			}
		}
		out[k] = cl
	}
	return out
}

// SortedSeries returns all series in stable order.
func (a *Aggregator) SortedSeries() []*Series {
	if a.dirty {
		slices.SortFunc(a.sorted, func(x, y *Series) int {
			return cmp.Or(cmp.Compare(x.Signal, y.Signal), cmp.Compare(x.Entity, y.Entity))
		})
		a.dirty = false
	}
	return a.sorted
}

// String describes the aggregator for logs.
func (a *Aggregator) String() string {
	return fmt.Sprintf("aggregator{series=%d closedTo=%d}", a.count(), a.closedTo)
}
