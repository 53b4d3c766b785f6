package alerting

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // local times need the zone rules even where the system has none

	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/words"
)

// BucketWidth is the bucket width that per-bucket volumes (bytes, queries)
// are divided by to give rates in notifications.
var BucketWidth = 5 * time.Minute

// Human writes a value of signal the way a person reads it: traffic as a
// bit rate, queries per second, ratios as percentages, latency in ms.
func Human(signal string, v float64) string {
	unit, perBucket := "", false
	if s, ok := obs.Lookup(signal); ok {
		unit, perBucket = s.Def().Unit, countsPerBucket(s.Def())
	}
	per := BucketWidth.Seconds()
	switch unit {
	case "bytes":
		return rate(v*8/per, "bit/s")
	case "packets":
		return count(v/per, "packets/s")
	case "queries":
		return count(v/per, "queries/s")
	case "ratio":
		return strconv.FormatFloat(round1(v*100), 'f', -1, 64) + " %"
	case "ms":
		return strconv.FormatFloat(round1(v), 'f', -1, 64) + " ms"
	case "Mbps":
		return rate(v*1e6, "bit/s")
	}
	if perBucket {
		// A count per bucket that reads better as a count than as a
		// rate (567 withdrawals, not 1.9 a second) says its bucket.
		return count(v, words.Unit(unit)) + " per " + HumanDuration(BucketWidth)
	}
	return count(v, words.Unit(unit))
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// si splits v into two or three significant digits and an SI prefix:
// ("1.2", "G"), ("39", "G"), ("850", "").
func si(v float64) (string, string) {
	prefixes := []string{"", "k", "M", "G", "T", "P"}
	i := 0
	for math.Abs(v) >= 999.5 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	if math.Abs(v) >= 10 || v == 0 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64), prefixes[i]
	}
	if math.Abs(v) < 1 {
		// Two significant digits, so that a small rate does not read
		// as none: 0.077 queries/s, not 0.
		return strconv.FormatFloat(v, 'g', 2, 64), prefixes[i]
	}
	return strconv.FormatFloat(round1(v), 'f', -1, 64), prefixes[i]
}

// rate writes "1.2 Gbit/s".
func rate(v float64, unit string) string {
	n, p := si(v)
	return n + " " + p + unit
}

// count writes "1.2k queries/s", "850 queries/s".
func count(v float64, unit string) string {
	n, p := si(v)
	if unit == "" {
		return n + p
	}
	return n + p + " " + unit
}

// HumanChange writes a change in percent with a real minus sign: "−97 %".
func HumanChange(pct float64) string {
	r := math.Round(pct)
	if math.Abs(pct) < 10 {
		r = round1(pct)
	}
	s := strconv.FormatFloat(math.Abs(r), 'f', -1, 64) + " %"
	switch {
	case r < 0:
		return "−" + s
	case r > 0:
		return "+" + s
	}
	return s
}

// HumanDuration writes a duration as people say it: "4 d 20 h", "2 h 5 min",
// "35 min".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	d = d.Round(time.Minute)
	days := d / (24 * time.Hour)
	h := (d % (24 * time.Hour)) / time.Hour
	m := (d % time.Hour) / time.Minute
	switch {
	case days > 0 && h > 0:
		return fmt.Sprintf("%d d %d h", days, h)
	case days > 0:
		return fmt.Sprintf("%d d", days)
	case h > 0 && m > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case h > 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d min", m)
}

// ObservedUnit is the unit an event states beside a signal's observed
// and baseline values (words.JSONUnit): a count per bucket is per
// BucketWidth.
func ObservedUnit(signal string) string {
	s, ok := obs.Lookup(signal)
	if !ok {
		return ""
	}
	return words.JSONUnit(s.Def().Unit, countsPerBucket(s.Def()), BucketWidth)
}

// countsPerBucket says whether a signal's value is a count over its bucket
// (bytes, queries, withdrawals summed; DNS clients counted distinct in
// the bucket) rather than a level (a latency, a ratio, announced space).
func countsPerBucket(d *obs.SignalDef) bool {
	return d.Agg == obs.Sum || d.Unit == "clients"
}

// BaselineWording says in words what a baseline method compared with.
func BaselineWording(method string) string {
	switch method {
	case "similar_days":
		return "the same time on similar days"
	case "previous_days", "previous_day":
		return "the same time on the previous days"
	case "previous_weeks":
		return "the same time in previous weeks"
	case "same_time_previous_days":
		return "the same time on the previous days"
	case "median_recent", "recent_median":
		return "the median of the recent buckets"
	case "max_recent":
		return "the highest of the recent buckets"
	case "previous_hour":
		return "the level of the hour before"
	case "threshold":
		return "the alert threshold"
	case "":
		return "its recent level"
	}
	return strings.ReplaceAll(method, "_", " ")
}

// Measure writes "observed vs baseline, change" for an alert or event:
// "1.2 Gbit/s vs 39 Gbit/s expected, −97 %", or for a threshold
// "8.1 % (threshold 10 %)".
func Measure(signal string, observed, baseline, changePct float64, method string) string {
	if method == "threshold" && signal == "packet_loss" {
		// The threshold is per destination; the observed value is the
		// loss over all of them, which can be lower.
		return Human(signal, observed) + " of packets lost (a destination counts as lossy from " + Human(signal, baseline) + ")"
	}
	if method == "threshold" {
		return Human(signal, observed) + " (threshold " + Human(signal, baseline) + ")"
	}
	if baseline == 0 {
		return Human(signal, observed) + " vs " + Human(signal, baseline) + " expected"
	}
	return Human(signal, observed) + " vs " + Human(signal, baseline) + " expected, " + HumanChange(changePct)
}

// SummaryInWords writes a detector's summary of an alert for a person, as
// the rest of a notification is written: a signal named by its raw name
// ("traffic_bytes of AS20294", "(bgp_announced_v4)") in words ("traffic
// of AS20294", "(announced IPv4 space)"), the
// baseline method it judged against in words ("against similar_days
// baseline": "against the same time on similar days"), and a minus before
// a figure as a real minus sign ("−96.9%").
func SummaryInWords(signal, summary string) string {
	if signal != "" {
		if rest, ok := strings.CutPrefix(summary, signal+" of "); ok {
			summary = SignalWords(signal) + " of " + rest
		}
		summary = strings.ReplaceAll(summary, "("+signal+")", "("+SignalWords(signal)+")")
	}
	summary = rawMethod.ReplaceAllStringFunc(summary, func(m string) string {
		return "against " + BaselineWording(rawMethod.FindStringSubmatch(m)[1])
	})
	return asciiMinus.ReplaceAllString(summary, "${1}−${2}")
}

var (
	// rawMethod is a baseline method named as the code names it
	// ("against similar_days baseline").
	rawMethod = regexp.MustCompile(`against ([a-z]+_[a-z_]+) baseline`)
	// asciiMinus is a hyphen standing for a minus: before a figure, at
	// the start or after a space or an opening parenthesis.
	asciiMinus = regexp.MustCompile(`(^|[\s(])-([0-9])`)
)

// SignalWords names a signal in words for notifications.
func SignalWords(signal string) string {
	switch signal {
	case "traffic_bytes":
		return "traffic"
	case "traffic_packets":
		return "packets"
	case "dns_queries":
		return "DNS queries"
	case "dns_clients":
		return "DNS clients"
	case "dns_failure_ratio":
		return "DNS failures"
	case "bgp_announced_v4":
		return "announced IPv4 space"
	case "bgp_announced_v6":
		return "announced IPv6 space"
	case "bgp_withdrawals":
		return "BGP withdrawals"
	case "latency_p50":
		return "median latency"
	case "latency_p95":
		return "95th percentile latency"
	case "latency_min":
		return "lowest latency"
	case "bandwidth_p50":
		return "median bandwidth"
	case "packet_loss":
		return "packet loss"
	}
	return strings.ReplaceAll(signal, "_", " ")
}

// ZoneTab is the tz database's country → zone table, read for the local
// time of a place in notifications.
var ZoneTab = "/usr/share/zoneinfo/zone.tab"

var (
	zonesOnce sync.Once
	zones     map[string]string
)

// LocalZone returns the main time zone of a country (ISO 3166 code): the
// first zone the tz database lists for it (Spain: Europe/Madrid), or false
// when the table or the zone is not installed.
func LocalZone(cc string) (*time.Location, bool) {
	zonesOnce.Do(func() {
		zones = map[string]string{}
		b, err := os.ReadFile(ZoneTab)
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Split(line, "\t")
			if len(f) < 3 || strings.HasPrefix(line, "#") {
				continue
			}
			if _, seen := zones[f[0]]; !seen {
				zones[f[0]] = f[2]
			}
		}
	})
	name, ok := zones[strings.ToUpper(cc)]
	if !ok {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	return loc, err == nil
}

// When writes a time in UTC, to the minute, and in the place's local time
// when the country is known: "2025-04-28 10:35 UTC (12:35 Europe/Madrid)".
func When(t time.Time, country string) string {
	if t.IsZero() {
		return "unknown"
	}
	s := t.UTC().Format("2006-01-02 15:04 UTC")
	if loc, ok := LocalZone(country); ok && country != "" {
		lt := t.In(loc)
		f := "15:04"
		if lt.YearDay() != t.UTC().YearDay() {
			f = "Jan 2 15:04"
		}
		s += " (" + lt.Format(f) + " " + loc.String() + ")"
	}
	return s
}

// silentFeed says whether ev is a feed's silence: records against no
// expectation, which measure nothing ("records 0 vs 0 expected"), so
// notifications say "no data" instead.
func silentFeed(ev *Event) bool {
	return ev.Detector == "feed_health" && ev.Signal == "records"
}

// TextLine is one notification as a line for a person, as `replay --text`
// prints it: when the pipeline knew, what happened and how bad, in the
// words of the Slack message.
//
//	2025-04-28 10:45 UTC  event open     [critical] Outage in Spain: traffic 1.8 Gbit/s vs 4.7 Gbit/s expected, −61 %; …
//	2025-04-28 10:45 UTC  alert firing   [critical] Spain: traffic 1.8 Gbit/s vs 4.7 Gbit/s expected, −61 % (traffic_drop; event 9a09…)
func TextLine(ev *Event) string {
	at := ev.At.UTC().Format("2006-01-02 15:04 UTC")
	if ev.IsEvent() {
		s := fmt.Sprintf("%s  event %-8s [%s] %s", at, ev.Update, ev.Severity, ev.Summary)
		if len(ev.Grew) > 0 {
			s += " (grew: " + strings.Join(ev.Grew, "; ") + ")"
		}
		return s
	}
	name := ev.Entity
	if d := ev.Labels["display"]; d != "" {
		name = d
	}
	now := ""
	if ev.Status == Resolved {
		now = "now "
	}
	what := name + ": " + SignalWords(ev.Signal) + " " + now + Measure(ev.Signal, ev.Observed, ev.Baseline, ev.ChangePct, ev.BaselineMethod)
	if silentFeed(ev) && ev.Summary != "" {
		// Its summary names the feed and says what the silence means.
		what = ev.Summary
	}
	s := fmt.Sprintf("%s  alert %-8s [%s] %s", at, ev.Status, ev.Severity, what)
	var notes []string
	notes = append(notes, ev.Detector)
	if ev.OutageEvent != "" {
		notes = append(notes, "event "+ev.OutageEvent)
	}
	if ev.Muted != "" {
		notes = append(notes, "muted: "+ev.Muted)
	}
	return s + " (" + strings.Join(notes, "; ") + ")"
}
