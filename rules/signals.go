package rules

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/obs"
)

// rawSignal is one entry of a file's signals: list. Signals measured
// elsewhere (an IODA or Radar export, a Prometheus query) are declared here
// rather than in Go, so that exports replay and rules judge them like the
// signals the decoders make.
type rawSignal struct {
	Name          string `yaml:"name"`
	Unit          string `yaml:"unit"`
	Kind          string `yaml:"kind"`
	Aggregate     string `yaml:"aggregate"`
	Feed          string `yaml:"feed"`
	Cadence       string `yaml:"cadence"`
	MissingIsZero bool   `yaml:"missing_is_zero"`
	// Precision is the relative error the history may keep (0.001 =
	// ±0.1 %): finer than the default ±2 % for a signal judged against
	// thresholds of a few percent, such as IODA's 99 % of BGP visibility.
	Precision float64 `yaml:"precision"`
	// Noise names the sampling noise the values carry beyond their own
	// history's: "poisson" for counts of independent events or of
	// sampled units (obs.SignalDef.Poisson); empty for none.
	Noise string `yaml:"noise"`
	// CountedEvery is, for a Poisson signal whose values are the mean of
	// counts over a shorter interval (IODA's telescope: one-minute counts
	// averaged over each 5-minute step), that interval: each value is the
	// mean of cadence/counted_every counts.
	CountedEvery string `yaml:"counted_every"`
	Description  string `yaml:"description"`
}

var signalName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// defaultAgg is how buckets of each kind combine unless the declaration
// says otherwise: volumes add up, a gauge keeps its latest reading, a
// ratio averages, and a distinct count keeps its largest reading (counts
// of distinct sources cannot be added).
var defaultAgg = map[obs.Kind]obs.Aggregation{
	obs.KindVolume: obs.Sum, obs.KindGauge: obs.Last, obs.KindRatio: obs.Mean, obs.KindDistinct: obs.Max,
}

// declareSignals registers every signal of a signals: list and returns
// them in file order.
func declareSignals(file string, list *yaml.Node) ([]obs.Signal, error) {
	if list.Kind != yaml.SequenceNode {
		return nil, &Error{file, list.Line, "'signals:' must be a list"}
	}
	var out []obs.Signal
	for _, n := range list.Content {
		s, err := declareSignal(file, n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func declareSignal(file string, n *yaml.Node) (obs.Signal, error) {
	if n.Kind != yaml.MappingNode {
		return 0, &Error{file, n.Line, "each signal must be a mapping"}
	}
	if err := checkKeys(file, n, reflect.TypeOf(rawSignal{}), "signal"); err != nil {
		return 0, err
	}
	var raw rawSignal
	if err := n.Decode(&raw); err != nil {
		return 0, yamlError(file, err)
	}
	fail := func(key, format string, args ...any) error {
		line := keyLine(n, key)
		if line == 0 {
			line = n.Line
		}
		return &Error{file, line, fmt.Sprintf("signal %q: ", raw.Name) + fmt.Sprintf(format, args...)}
	}
	if !signalName.MatchString(raw.Name) {
		return 0, fail("name", "want a name of lower-case letters, digits and _ (such as bgp_visible_slash24)")
	}
	kinds := []obs.Kind{obs.KindVolume, obs.KindGauge, obs.KindRatio, obs.KindDistinct}
	kind := obs.Kind(raw.Kind)
	if !slices.Contains(kinds, kind) {
		return 0, fail("kind", "kind %q: want one of volume, gauge, ratio, distinct", raw.Kind)
	}
	d := obs.SignalDef{Name: raw.Name, Unit: raw.Unit, Kind: kind, Feed: obs.Feed(raw.Feed),
		Agg: defaultAgg[kind], ZeroWhenAbsent: raw.MissingIsZero}
	if d.Feed == "" {
		d.Feed = obs.FeedObs
	}
	if raw.Aggregate != "" {
		a, err := obs.ParseAggregation(raw.Aggregate)
		if err != nil {
			return 0, fail("aggregate", "%v", err)
		}
		d.Agg = a
	}
	if raw.Cadence != "" {
		c, err := time.ParseDuration(raw.Cadence)
		if err != nil || c < time.Second {
			return 0, fail("cadence", "cadence %q: want a duration of a second or more, such as 5m or 1h", raw.Cadence)
		}
		d.Cadence = int64(c)
	}
	if raw.Precision < 0 || raw.Precision > 0.02 || (raw.Precision > 0 && raw.Precision < 0.0001) {
		return 0, fail("precision", "precision %g: want a relative error between 0.0001 (±0.01 %%) and 0.02 (±2 %%, the default)", raw.Precision)
	}
	d.Precision = raw.Precision
	switch raw.Noise {
	case "":
	case "poisson":
		d.Poisson = true
	default:
		return 0, fail("noise", "noise %q: want poisson (a count of independent events or sampled units) or nothing", raw.Noise)
	}
	if raw.CountedEvery != "" {
		every, err := time.ParseDuration(raw.CountedEvery)
		switch {
		case !d.Poisson:
			return 0, fail("counted_every", "counted_every needs noise: poisson: it says how many counts each value is the mean of")
		case d.Cadence == 0:
			return 0, fail("counted_every", "counted_every needs a cadence: each value is the mean of cadence/counted_every counts")
		case err != nil || every < time.Second || d.Cadence%int64(every) != 0:
			return 0, fail("counted_every", "counted_every %q: want a duration that divides the cadence (%s), such as 1m", raw.CountedEvery, time.Duration(d.Cadence))
		}
		d.MeanOf = float64(d.Cadence / int64(every))
	}
	if d.ZeroWhenAbsent && kind != obs.KindVolume {
		return 0, fail("missing_is_zero", "only a volume can read a missing value as zero: a %s that was not reported is unknown", kind)
	}
	s, err := obs.Declare(d)
	if err != nil {
		return 0, fail("name", "%v", err)
	}
	return s, nil
}

// parseSignals declares the signals of a document without reading its
// rules; merge runs it over every file first.
func parseSignals(file string, b []byte) ([]obs.Signal, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil // Parse reports it
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "signals" {
			return declareSignals(file, top.Content[i+1])
		}
	}
	return nil, nil
}
