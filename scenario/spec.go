// Package scenario reads incident fixtures, YAML specs modelled on published
// figures of real outages, and renders them deterministically into the real
// wire formats outagewatch ingests: the same spec and seed always give the
// same bytes, so a replay always gives the same alerts. Each spec also says
// what must fire, when, and what must stay silent, so that every detector
// change is scored against history.
package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/ingest"
)

// Spec is one incident fixture.
type Spec struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Sources     []string  `yaml:"sources"`
	Start       time.Time `yaml:"start"`
	End         time.Time `yaml:"end"`
	Seed        uint64    `yaml:"seed"`
	// Rules optionally names a rules file (relative to the spec) to replay
	// with instead of the shipped rules.
	Rules     string   `yaml:"rules"`
	LocalASNs []uint32 `yaml:"local_asns"`
	// Countries and Networks describe who is seen and how much.
	Countries map[string]Country `yaml:"countries"`
	Networks  []Network          `yaml:"networks"`
	// Flows configures how traffic is rendered as goflow2 records.
	Flows FlowsConfig `yaml:"flows"`
	// Events change the shape of traffic: outages, spikes, holidays.
	Events []Event `yaml:"events"`
	// Expect is what must fire; Allow lists alerts that may fire without
	// counting as false (a small network inside a blacked-out country).
	Expect []Expectation `yaml:"expect"`
	Allow  []Allowance   `yaml:"allow"`
	// Sections of other streams (bgp, dns, quality) are decoded by the
	// renderers registered for them.
	Sections map[string]yaml.Node `yaml:",inline"`

	// File is where the spec was read from.
	File string `yaml:"-"`
}

// Country is a country's traffic as the observer sees it.
type Country struct {
	// Peak is the bytes per 5-minute bucket at the daily peak, summed over
	// the country's networks.
	Peak float64 `yaml:"peak"`
	// UTCOffset shifts the daily curve to local time (hours).
	UTCOffset float64 `yaml:"utc_offset"`
	// Weekend scales Saturdays and Sundays (default 0.9).
	Weekend float64 `yaml:"weekend"`
	// Noise is the relative standard deviation per bucket (default 0.03).
	Noise float64 `yaml:"noise"`
	Name  string  `yaml:"name"`
}

// Network is an autonomous system whose users the observer serves.
type Network struct {
	ASN     uint32  `yaml:"asn"`
	Name    string  `yaml:"name"`
	Country string  `yaml:"country"`
	Share   float64 `yaml:"share"` // of its country's traffic
	// Regions splits the network's traffic between regions (shares of the
	// network's traffic); the rest is unattributed to any region.
	Regions []RegionShare `yaml:"regions"`
}

// RegionShare is the part of a network's traffic going to one region.
type RegionShare struct {
	Code  string  `yaml:"code"`
	Share float64 `yaml:"share"`
}

// FlowsConfig says how traffic becomes flow records.
type FlowsConfig struct {
	// Format is goflow2-pb (default) or goflow2-json.
	Format string `yaml:"format"`
	// Records is how many flow records each (network, region) sends per
	// bucket (default 3).
	Records int `yaml:"records"`
	// SamplingRate is written into every record (default 1000).
	SamplingRate uint64 `yaml:"sampling_rate"`
	// Disabled renders no flows (a fixture of another stream only).
	Disabled bool `yaml:"disabled"`
}

// Event changes traffic of its targets between Start and End: the factor is
// reached over RampDown after Start, and recovery takes RampUp after End.
type Event struct {
	Name     string             `yaml:"name"`
	Kind     string             `yaml:"kind"` // outage, spike, holiday, shift
	Start    time.Time          `yaml:"start"`
	End      time.Time          `yaml:"end"`
	RampDown detectors.Duration `yaml:"ramp_down"`
	RampUp   detectors.Duration `yaml:"ramp_up"`
	Factor   float64            `yaml:"factor"`
	// Targets are entity patterns: "country:UG", "asn:5089", "region:US-TN".
	Targets []string `yaml:"targets"`
	// Streams the event affects (default: all). A BGP-only event leaves
	// traffic alone.
	Streams []string `yaml:"streams"`
}

// Expectation is an alert the replay must raise.
type Expectation struct {
	Detector string    `yaml:"detector"`
	Entity   string    `yaml:"entity"`
	Signal   string    `yaml:"signal"`
	Onset    time.Time `yaml:"onset"`
	// Within is the longest acceptable detection delay after Onset.
	Within detectors.Duration `yaml:"within"`
	// ResolveAfter, when set, requires a resolve between it and
	// ResolveAfter+ResolveWithin.
	ResolveAfter  time.Time          `yaml:"resolve_after"`
	ResolveWithin detectors.Duration `yaml:"resolve_within"`
}

// Allowance is an alert that may fire in a window without counting as false.
type Allowance struct {
	Detector string    `yaml:"detector"`
	Entity   string    `yaml:"entity"` // glob
	From     time.Time `yaml:"from"`
	To       time.Time `yaml:"to"`
}

// Load reads and validates a spec.
func Load(file string) (*Spec, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(file, b)
}

// Parse validates a spec document.
func Parse(file string, b []byte) (*Spec, error) {
	var s Spec
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s.File = file
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for name := range s.Sections {
		if _, ok := sections[name]; !ok {
			return nil, fmt.Errorf("%s: unknown section %q (known: %v)", file, name, sectionNames())
		}
	}
	return &s, nil
}

func (s *Spec) validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("no name")
	case s.Start.IsZero() || !s.End.After(s.Start):
		return fmt.Errorf("start and end: want end after start")
	case s.End.Sub(s.Start) > 60*24*time.Hour:
		return fmt.Errorf("start and end: at most 60 days")
	}
	if s.Flows.Format == "" {
		s.Flows.Format = "goflow2-pb"
	}
	if s.Flows.Format != "goflow2-pb" && s.Flows.Format != "goflow2-json" {
		return fmt.Errorf("flows.format: %q, want goflow2-pb or goflow2-json", s.Flows.Format)
	}
	if s.Flows.Records <= 0 {
		s.Flows.Records = 3
	}
	if s.Flows.SamplingRate == 0 {
		s.Flows.SamplingRate = 1000
	}
	for cc, c := range s.Countries {
		if c.Peak < 0 {
			return fmt.Errorf("countries.%s.peak: must not be negative", cc)
		}
		if c.Weekend == 0 {
			c.Weekend = 0.9
		}
		if c.Noise == 0 {
			c.Noise = 0.03
		}
		s.Countries[cc] = c
	}
	for i, n := range s.Networks {
		if n.ASN == 0 {
			return fmt.Errorf("networks[%d]: no asn", i)
		}
		if _, ok := s.Countries[n.Country]; !ok {
			return fmt.Errorf("networks[%d] (AS%d): country %q is not under countries", i, n.ASN, n.Country)
		}
		var sum float64
		for _, r := range n.Regions {
			sum += r.Share
		}
		if sum > 1.0001 {
			return fmt.Errorf("networks[%d] (AS%d): region shares add up to %.2f > 1", i, n.ASN, sum)
		}
	}
	for i, e := range s.Events {
		if !e.End.After(e.Start) || e.Factor < 0 || len(e.Targets) == 0 {
			return fmt.Errorf("events[%d] %q: want end after start, a factor ≥ 0 and targets", i, e.Name)
		}
	}
	for i, x := range s.Expect {
		if x.Detector == "" || x.Entity == "" || x.Onset.IsZero() || x.Within <= 0 {
			return fmt.Errorf("expect[%d]: want detector, entity, onset and within", i)
		}
	}
	return nil
}

// Factor returns the multiplier that the events put on an entity set at t
// for stream. ents are the entity names the traffic belongs to (its ASN,
// country, region).
func (s *Spec) Factor(stream string, t time.Time, ents ...string) float64 {
	f := 1.0
	for i := range s.Events {
		e := &s.Events[i]
		if len(e.Streams) > 0 && !slices.Contains(e.Streams, stream) {
			continue
		}
		if !e.matches(ents) {
			continue
		}
		f *= e.factorAt(t)
	}
	return f
}

// matches reports whether any target matches the traffic's entities. A
// target "asn:7018&region:US-TN" needs every part to match: one network's
// traffic in one region.
func (e *Event) matches(ents []string) bool {
	for _, target := range e.Targets {
		all := true
		for _, pat := range strings.Split(target, "&") {
			if !slices.ContainsFunc(ents, func(ent string) bool {
				ok, _ := path.Match(pat, ent)
				return ok && ent != ""
			}) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (e *Event) factorAt(t time.Time) float64 {
	down, up := time.Duration(e.RampDown), time.Duration(e.RampUp)
	switch {
	case t.Before(e.Start) || !t.Before(e.End.Add(up)):
		return 1
	case t.Before(e.Start.Add(down)):
		x := float64(t.Sub(e.Start)) / float64(down)
		return 1 + (e.Factor-1)*x
	case t.Before(e.End):
		return e.Factor
	default:
		x := float64(t.Sub(e.End)) / float64(up)
		return e.Factor + (1-e.Factor)*x
	}
}

// diurnal is the share of the daily peak by local hour: a trough before
// dawn, a rise through the working day, the peak in the evening.
var diurnal = [24]float64{0.62, 0.48, 0.38, 0.32, 0.30, 0.31, 0.36, 0.46, 0.56, 0.62, 0.66, 0.69,
	0.72, 0.73, 0.73, 0.74, 0.77, 0.82, 0.88, 0.95, 1.0, 0.99, 0.92, 0.78}

// Seasonal returns the share of the daily peak at t for a place offset
// hours from UTC, with weekend the factor for Saturdays and Sundays.
func Seasonal(t time.Time, offset, weekend float64) float64 {
	lt := t.Add(time.Duration(offset * float64(time.Hour)))
	h := float64(lt.Hour()) + float64(lt.Minute())/60
	i := int(h) % 24
	x := h - float64(int(h))
	v := diurnal[i]*(1-x) + diurnal[(i+1)%24]*x
	if wd := lt.Weekday(); wd == time.Saturday || wd == time.Sunday {
		v *= weekend
	}
	return v
}

// Renderer turns a spec into the records of one stream, in time order.
type Renderer interface {
	Stream() string
	Render(s *Spec, emit func(*ingest.Record)) error
}

// SectionFunc builds the renderer of a spec section.
type SectionFunc func(s *Spec, node *yaml.Node) (Renderer, error)

var sections = map[string]SectionFunc{}

// RegisterSection makes a spec section (bgp, dns, quality) renderable.
func RegisterSection(name string, f SectionFunc) {
	if _, dup := sections[name]; dup {
		panic("scenario: section " + name + " registered twice")
	}
	sections[name] = f
}

func sectionNames() []string {
	var out []string
	for n := range sections {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Renderers returns the renderers of every stream the spec has: flows
// unless disabled, then its sections in name order.
func (s *Spec) Renderers() ([]Renderer, error) {
	var rs []Renderer
	if !s.Flows.Disabled && len(s.Networks) > 0 {
		rs = append(rs, flowRenderer{})
	}
	names := make([]string, 0, len(s.Sections))
	for n := range s.Sections {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		node := s.Sections[n]
		r, err := sections[n](s, &node)
		if err != nil {
			return nil, fmt.Errorf("%s: section %s: %w", s.File, n, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// EntityMatches reports whether entity matches a glob pattern.
func EntityMatches(pattern, entity string) bool {
	ok, _ := path.Match(pattern, entity)
	return ok || strings.EqualFold(pattern, entity)
}
