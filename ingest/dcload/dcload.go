// Package dcload decodes the load reports data centers send: CPU
// utilisation, CPU time in use (in total and per customer plan) and the p95
// latency SLI. They feed the Traffic Manager failover, which moves CPU time
// from a data center above its maximum utilisation to others, lowest plan
// first, and learns each data center's maximum from the SLI against CPU.
//
// One JSON object per record:
//
//	{"time": "2025-04-28T10:35:00Z",   // required: RFC 3339, or Unix seconds (fractions allowed)
//	 "dc": "lis01",                    // required: the data center
//	 "cpu_util": 0.9,                  // CPU utilisation, a ratio in [0, 1]
//	 "cpu_ms_per_s": 18000,            // CPU time in use, ms per second (18 cores busy = 18000)
//	 "plans": {"free": 2000, "pro": 3000, "business": 5000, "enterprise": 8000},
//	                                   // CPU ms/s per plan
//	 "sli_p95_ms": 18.2,               // p95 request latency, ms
//	 "edge_error_share": 0.004}        // share of requests answered 499 or 5xx at the edge
//
// edge_error_share is the Traffic Manager's error-rate trigger signal: users
// who reach a data center but are not served (a client giving up, 499, or a
// server error, 5xx), as a ratio in [0, 1].
//
// At least one of cpu_util, cpu_ms_per_s, plans, sli_p95_ms and
// edge_error_share must be
// present; null is the same as absent. Plans other than the four known ones
// are counted (Stats.UnknownPlans) and skipped, so that a new plan does not
// turn every report into a decode error before outagewatch knows it.
//
// Reports are a few per data center per minute, so the decoder uses
// encoding/json rather than a hand-written scanner.
package dcload

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/timeparse"
	"github.com/outagewatch/outagewatch/obs"
)

// Format is the ingest.Record format of the dcload stream.
const Format = "dcload-json"

// Signals of the dcload feed. They are gauges: the last report in a bucket
// stands for the bucket.
var (
	CPUUtil = obs.Register(obs.SignalDef{Name: "dc_cpu_util", Unit: "ratio", Feed: obs.FeedDCLoad, Agg: obs.Last})
	CPUms   = obs.Register(obs.SignalDef{Name: "dc_cpu_ms", Unit: "ms/s", Feed: obs.FeedDCLoad, Agg: obs.Last})
	SLIp95  = obs.Register(obs.SignalDef{Name: "dc_sli_p95_ms", Unit: "ms", Feed: obs.FeedDCLoad, Agg: obs.Last})
	// PlanCPUms is the CPU time of one plan in one data center, on a
	// PlanEntity: what the failover planner moves, lowest plan first.
	PlanCPUms = obs.Register(obs.SignalDef{Name: "dc_plan_cpu_ms", Unit: "ms/s", Feed: obs.FeedDCLoad, Agg: obs.Last})
)

// Plan is a customer plan, in the order the failover sheds load: Free
// first, Enterprise last.
type Plan uint8

const (
	Free Plan = iota
	Pro
	Business
	Enterprise
	NumPlans
)

var planNames = [NumPlans]string{"free", "pro", "business", "enterprise"}

// String returns the plan's name as reports and entities spell it.
func (p Plan) String() string {
	if p < NumPlans {
		return planNames[p]
	}
	return "plan(" + strconv.Itoa(int(p)) + ")"
}

// ParsePlan returns the plan of a lower-case name. Matching is exact so
// that a report with both "free" and "Free" cannot decode differently
// depending on map order.
func ParsePlan(name string) (Plan, bool) {
	for p, n := range planNames {
		if name == n {
			return Plan(p), true
		}
	}
	return 0, false
}

// KindPlan is the entity kind of one plan in one data center.
const KindPlan = "dcplan"

// PlanEntity names the series of one plan's CPU time in a data center,
// "dcplan:lis01/free". The data center comes first so that a planner lists
// a data center's plans by prefix.
func PlanEntity(dc string, p Plan) string { return KindPlan + ":" + dc + "/" + p.String() }

// ParsePlanEntity splits a plan entity into its data center's entity
// ("dc:lis01") and plan.
func ParsePlanEntity(e string) (dcEntity string, p Plan, ok bool) {
	rest, found := strings.CutPrefix(e, KindPlan+":")
	if !found {
		return "", 0, false
	}
	dc, name, found := strings.Cut(rest, "/")
	if !found || !validDC(dc) || dc == "" {
		return "", 0, false
	}
	if p, ok = ParsePlan(name); !ok {
		return "", 0, false
	}
	return obs.DC(dc), p, true
}

// Load is one decoded report. Absent values are NaN.
type Load struct {
	Time      int64 // Unix nanoseconds
	DC        string
	CPUUtil   float64
	CPUms     float64
	PlanCPUms [NumPlans]float64
	SLIp95ms  float64
	ErrShare  float64
}

// Stats counts what a decoder did, for metrics.
type Stats struct {
	Reports      uint64
	Observations uint64
	UnknownPlans uint64
}

// Decoder decodes dcload reports. It is used by one goroutine at a time.
type Decoder struct {
	stats Stats
	names map[string]*dcNames // data center → its entity names
}

type dcNames struct {
	dc    string
	plans [NumPlans]string
}

// NewDecoder returns a decoder.
func NewDecoder() *Decoder { return &Decoder{names: map[string]*dcNames{}} }

var _ ingest.Decoder = (*Decoder)(nil)

// Stats returns the counts so far.
func (d *Decoder) Stats() Stats { return d.stats }

type wire struct {
	Time    json.RawMessage     `json:"time"`
	DC      *string             `json:"dc"`
	CPUUtil *float64            `json:"cpu_util"`
	CPUms   *float64            `json:"cpu_ms_per_s"`
	Plans   map[string]*float64 `json:"plans"`
	SLI     *float64            `json:"sli_p95_ms"`
	Err     *float64            `json:"edge_error_share"`
}

// Parse decodes and validates one report.
func (d *Decoder) Parse(value []byte) (Load, error) {
	var w wire
	if err := json.Unmarshal(value, &w); err != nil {
		return Load{}, jsonErr(err)
	}
	l := Load{CPUUtil: math.NaN(), CPUms: math.NaN(), SLIp95ms: math.NaN(), ErrShare: math.NaN()}
	for i := range l.PlanCPUms {
		l.PlanCPUms[i] = math.NaN()
	}
	var err error
	if l.Time, err = parseTime(w.Time); err != nil {
		return Load{}, err
	}
	if w.DC == nil || *w.DC == "" {
		return Load{}, ingest.Errorf("missing_field", "no dc")
	}
	if !validDC(*w.DC) {
		return Load{}, ingest.Errorf("dc", "dc %.70q: want letters, digits, '-', '_', '.'", *w.DC)
	}
	l.DC = *w.DC
	n := 0
	if w.CPUUtil != nil {
		if v := *w.CPUUtil; !(v >= 0 && v <= 1) {
			return Load{}, ingest.Errorf("value_range", "cpu_util %v: want a ratio in [0, 1], not a percentage", v)
		}
		l.CPUUtil = *w.CPUUtil
		n++
	}
	if w.CPUms != nil {
		if v := *w.CPUms; !(v >= 0) {
			return Load{}, ingest.Errorf("value_range", "cpu_ms_per_s %v: want >= 0", v)
		}
		l.CPUms = *w.CPUms
		n++
	}
	if w.SLI != nil {
		if v := *w.SLI; !(v >= 0) {
			return Load{}, ingest.Errorf("value_range", "sli_p95_ms %v: want >= 0", v)
		}
		l.SLIp95ms = *w.SLI
		n++
	}
	if w.Err != nil {
		if v := *w.Err; !(v >= 0 && v <= 1) {
			return Load{}, ingest.Errorf("value_range", "edge_error_share %v: want a ratio in [0, 1]", v)
		}
		l.ErrShare = *w.Err
		n++
	}
	for name, v := range w.Plans {
		p, ok := ParsePlan(name)
		if !ok {
			d.stats.UnknownPlans++
			continue
		}
		if v == nil {
			continue
		}
		if !(*v >= 0) {
			return Load{}, ingest.Errorf("value_range", "plans.%.20s %v: want >= 0", name, *v)
		}
		l.PlanCPUms[p] = *v
		n++
	}
	if n == 0 {
		return Load{}, ingest.Errorf("no_measurement", "no cpu_util, cpu_ms_per_s, plans, sli_p95_ms or edge_error_share")
	}
	return l, nil
}

// Decode turns one report into observations on the data center's entity
// (and one per plan on its PlanEntity).
func (d *Decoder) Decode(value []byte, sink obs.Sink) error {
	l, err := d.Parse(value)
	if err != nil {
		return err
	}
	names := d.names[l.DC]
	if names == nil {
		if len(d.names) >= 1<<12 {
			clear(d.names)
		}
		names = &dcNames{dc: obs.DC(l.DC)}
		for p := range NumPlans {
			names.plans[p] = PlanEntity(l.DC, p)
		}
		d.names[l.DC] = names
	}
	d.stats.Reports++
	o := obs.Observation{Time: l.Time, Entity: names.dc}
	emit := func(sig obs.Signal, v float64) {
		if !math.IsNaN(v) {
			o.Signal, o.Value = sig, v
			sink.Observe(&o)
			d.stats.Observations++
		}
	}
	emit(CPUUtil, l.CPUUtil)
	emit(CPUms, l.CPUms)
	emit(SLIp95, l.SLIp95ms)
	for p, v := range l.PlanCPUms {
		o.Entity = names.plans[p]
		emit(PlanCPUms, v)
	}
	return nil
}

// Event times are accepted between 1970 and 2255 (Unix seconds below 9e9):
// a larger number is almost always milliseconds where seconds were meant.
const maxUnixSeconds = 9e9

func parseTime(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, ingest.Errorf("missing_field", "no time")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, ingest.Errorf("time", "time: %v", err)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, ingest.Errorf("time", "time %.60q is not RFC 3339", s)
		}
		if u := t.Unix(); u < 0 || u >= maxUnixSeconds {
			return 0, ingest.Errorf("time", "time %.60q out of range", s)
		}
		return t.UnixNano(), nil
	}
	if sec, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		if sec < 0 || sec >= maxUnixSeconds {
			return 0, ingest.Errorf("time", "time %d out of range (want Unix seconds)", sec)
		}
		return sec * 1e9, nil
	}
	// Exact for a plain decimal ("1745836500.25"), where a float64 would
	// give 1745836500249999872. Valid JSON has no leading zeros, so the
	// range check also bounds the number of digits.
	if sec, nsec, ok := timeparse.UnixSeconds(raw); ok && sec < maxUnixSeconds {
		return sec*1e9 + nsec, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64) // with an exponent
	if err != nil {
		return 0, ingest.Errorf("field_type", "time: want RFC 3339 string or Unix seconds")
	}
	if !(f >= 0 && f < maxUnixSeconds) {
		return 0, ingest.Errorf("time", "time %v out of range (want Unix seconds)", f)
	}
	return int64(f * 1e9), nil
}

func jsonErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return ingest.Errorf("field_type", "%s: want %s, got %s", te.Field, te.Type, te.Value)
	}
	return ingest.Errorf("json", "%v", err)
}

// validDC says whether s may name a data center inside entity names.
func validDC(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
