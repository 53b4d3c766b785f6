package correlate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/obs"
)

// Signal kinds: the independent views of an outage. Two alerts of one kind
// (IPv4 and IPv6 space, a country and its network) confirm less than two
// kinds do.
const (
	KindTraffic = "traffic"
	KindDNS     = "dns"
	KindRouting = "routing"
	KindQuality = "quality"
	KindOther   = "other"
)

var kindOrder = []string{KindTraffic, KindDNS, KindRouting, KindQuality, KindOther}

// KindOf says which view a signal gives, from the feed it comes from:
// alerts of one kind are one witness however many there are. A
// feed declared in a rules file is a view of its own, named as its feed:
// IODA's routing, active probing and telescope (ioda-bgp,
// ioda-active-probing, ioda-telescope) are three independent sources, as
// IODA counts them, not one "other". Observation lines with no feed of
// their own, and data-center load, stay other.
func KindOf(signal string) string {
	switch f := feedOf(signal); f {
	case string(obs.FeedFlows):
		return KindTraffic
	case string(obs.FeedDNS):
		return KindDNS
	case string(obs.FeedBGP):
		return KindRouting
	case string(obs.FeedQuality):
		return KindQuality
	case "", string(obs.FeedObs), string(obs.FeedDCLoad):
		return KindOther
	default:
		return f
	}
}

// Confidence is how sure an outage is from the kinds of view that see it
// (KindOf of each member's signal). Each independent view halves the
// doubt that one leaves: 0.4, 0.7, 0.85, 0.93. KindOther (observation
// lines with no feed of their own, data-center load) is no independent
// view beside another: it may be any of them.
func Confidence(kinds map[string]bool) float64 {
	indep := len(kinds)
	if kinds[KindOther] && indep > 1 {
		indep--
	}
	if indep == 0 {
		return 0
	}
	return round(1-0.6*math.Pow(0.5, float64(indep-1)), 2)
}

// kindRank orders kinds: the built-in views, then declared feeds, then
// other.
func kindRank(k string) int {
	if i := slices.Index(kindOrder[:len(kindOrder)-1], k); i >= 0 {
		return i
	}
	if k == KindOther {
		return len(kindOrder)
	}
	return len(kindOrder) - 1
}

func feedOf(signal string) string {
	s, ok := obs.Lookup(signal)
	if !ok {
		return ""
	}
	return string(s.Def().Feed)
}

// place is where an entity belongs: its country for a country, region or
// network the map knows; its transit AS for a transit or path; the owning
// network's country for a zone; else the entity itself.
func (c *Correlator) place(entity string) string {
	kind, id, err := obs.SplitEntity(entity)
	if err != nil {
		return entity
	}
	switch kind {
	case obs.KindCountry:
		return entity
	case obs.KindRegion:
		if cc, _, ok := strings.Cut(id, "-"); ok && len(cc) == 2 {
			return obs.Country(cc)
		}
	case obs.KindASN:
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			if cc := c.cfg.Map.Country(uint32(n)); cc != "" {
				return obs.Country(cc)
			}
		}
	case obs.KindTransit, "path":
		asn, _, _ := strings.Cut(id, "@")
		return "transit:" + asn
	case obs.KindZone:
		if asn, ok := c.zoneOwner(id); ok {
			return c.place(obs.ASN(asn))
		}
	}
	return entity
}

// zoneOwner finds the network a zone belongs to: from the configuration,
// else the network whose name, letters and digits only, is the zone's
// registrable label ("virginmedia.com" → "Virgin Media").
func (c *Correlator) zoneOwner(zone string) (uint32, bool) {
	if asn, ok := c.cfg.ZoneOwners[zone]; ok {
		return asn, true
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(zone)
	if err != nil {
		return 0, false
	}
	label, _, _ := strings.Cut(reg, ".")
	var found uint32
	for asn, name := range c.cfg.Map.Names {
		if squash(name) == label && (found == 0 || asn < found) {
			found = asn
		}
	}
	return found, found != 0
}

func squash(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// name is what a person reading the event calls an entity, as the map
// names it ("Spain", "MTN Uganda (AS20294)", "Gaza Strip (region 1226)"),
// with a transit watched as a whole said to be one.
func (c *Correlator) name(entity string) string {
	if kind, id, _ := strings.Cut(entity, ":"); kind == obs.KindTransit && !strings.Contains(id, "@") {
		return "transit " + c.cfg.Map.Name(entity)
	}
	return c.cfg.Map.Name(entity)
}

// entityRank orders entities widest first.
func entityRank(e string) int {
	kind, _, _ := strings.Cut(e, ":")
	switch kind {
	case obs.KindCountry:
		return 0
	case obs.KindTransit:
		return 1
	case obs.KindRegion:
		return 2
	case obs.KindASN:
		return 3
	case obs.KindZone:
		return 4
	}
	return 5
}

func compareEntity(a, b string) int {
	if d := entityRank(a) - entityRank(b); d != 0 {
		return d
	}
	// asn:2860 before asn:12430: numbers by value.
	_, ia, _ := strings.Cut(a, ":")
	_, ib, _ := strings.Cut(b, ":")
	na, ea := strconv.ParseUint(ia, 10, 64)
	nb, eb := strconv.ParseUint(ib, 10, 64)
	if ea == nil && eb == nil && na != nb {
		if na < nb {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// build renders the event as it stands at event time at.
func (c *Correlator) build(inc *incident, at time.Time) *alerting.Event {
	members := make([]*alerting.Event, 0, len(inc.Joined))
	for _, id := range inc.Joined {
		members = append(members, inc.Members[id])
	}
	start := c.start(inc)
	ev := &alerting.Event{ID: inc.ID, Kind: alerting.KindEvent, Status: alerting.Firing, Rule: "outage",
		Detector: "correlation", Start: start, At: at, Actions: []string{}, Outage: &alerting.Outage{}}
	o := ev.Outage
	o.Members = slices.Clone(inc.Joined)

	// Scope: every entity with a member, widest first.
	seen := map[string]bool{}
	var ents []string
	for _, m := range members {
		if !seen[m.Entity] {
			seen[m.Entity] = true
			ents = append(ents, m.Entity)
		}
	}
	slices.SortFunc(ents, compareEntity)
	o.Scope.Place = inc.Place
	o.Scope.Name = c.name(inc.Place)
	shares := c.shares(inc.Place, ents, start)
	for _, e := range ents {
		o.Scope.Entities = append(o.Scope.Entities, alerting.ScopeEntity{Entity: e, Name: c.name(e), Share: round(shares[e], 3)})
	}

	// Signals: per signal, the widest entity's alert (then the largest
	// change), with how many alerts it has.
	bySig := map[string][]*alerting.Event{}
	for _, m := range members {
		bySig[m.Signal] = append(bySig[m.Signal], m)
	}
	kinds := map[string]bool{}
	for sig, ms := range bySig {
		slices.SortStableFunc(ms, func(a, b *alerting.Event) int {
			if d := compareEntity(a.Entity, b.Entity); d != 0 && entityRank(a.Entity) != entityRank(b.Entity) {
				return d
			}
			return cmpFloat(math.Abs(b.ChangePct), math.Abs(a.ChangePct))
		})
		w := ms[0]
		k := KindOf(sig)
		kinds[k] = true
		first := w.Start
		for _, m := range ms {
			if m.Start.Before(first) {
				first = m.Start
			}
		}
		o.Signals = append(o.Signals, alerting.SignalChange{Kind: k, Signal: sig, Entity: w.Entity, Detector: w.Detector,
			Observed: w.Observed, Baseline: w.Baseline, ObservedUnit: alerting.ObservedUnit(sig), ChangePct: w.ChangePct,
			Threshold: w.Threshold, Start: first, Alerts: len(ms)})
	}
	slices.SortFunc(o.Signals, func(a, b alerting.SignalChange) int {
		return cmp.Or(kindRank(a.Kind)-kindRank(b.Kind), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Signal, b.Signal))
	})
	o.Confidence = Confidence(kinds)

	// The headline: the place-wide traffic signal if there is one, else
	// the first signal.
	if len(o.Signals) > 0 {
		h := o.Signals[0]
		ev.Signal, ev.Entity, ev.Observed, ev.Baseline, ev.ChangePct = h.Signal, h.Entity, h.Observed, h.Baseline, h.ChangePct
		ev.ObservedUnit = h.ObservedUnit
		for _, m := range members {
			if m.Signal == h.Signal && m.Entity == h.Entity {
				ev.BaselineMethod, ev.Evidence, ev.Details = m.BaselineMethod, m.Evidence, m.Details
			}
		}
	}
	ev.Labels = map[string]string{"place": inc.Place}
	if strings.HasPrefix(inc.Place, "country:") {
		ev.Labels["country"] = strings.TrimPrefix(inc.Place, "country:")
	}
	if o.Scope.Name != "" {
		ev.Labels["name"] = o.Scope.Name
	}
	o.Title = c.title(inc.Place, o.Scope, members)
	c.transitScope(o, members)
	drop, share := c.dropShare(members, shares, inc.Place)
	o.Scope.Share = round(share, 3)
	end := at
	if inc.firing() == 0 {
		end = time.Time{}
		for _, m := range members {
			if m.End != nil && m.End.After(end) {
				end = *m.End
			}
		}
	}
	o.Impact = round(Impact(drop, share, end.Sub(start), c.cfg.Severity.FullAfter), 3)
	o.PeakImpact = max(o.Impact, inc.PeakImpact)
	o.FiguresAt = "firing"
	if inc.firing() == 0 {
		o.FiguresAt = "paged"
	}
	ev.Severity = capSeverity(c.cfg.Severity.Severity(o.Impact), members)
	o.Cause = c.cause(members, shares)
	ev.Receivers = receivers(members)
	ev.Summary = c.summary(ev)
	return ev
}

// Impact is IODA's product: the size of the drop (0..1) × the share of the
// place affected (0..1) × how long it has lasted, as a fraction of
// fullAfter (at most 1). An hour-long total outage of a whole country is 1.
func Impact(drop, share float64, d, fullAfter time.Duration) float64 {
	f := 1.0
	if fullAfter > 0 {
		f = min(1, max(0, d.Seconds()/fullAfter.Seconds()))
	}
	return max(0, min(1, drop)) * max(0, min(1, share)) * f
}

// shares weighs each network of a country by its traffic the day before
// the event, against the country's; the country itself is 1.
func (c *Correlator) shares(place string, ents []string, start time.Time) map[string]float64 {
	out := map[string]float64{}
	if !strings.HasPrefix(place, "country:") {
		return out
	}
	t := start.Add(-24 * time.Hour)
	for _, sig := range []string{"traffic_bytes", "dns_queries"} {
		if c.cfg.Level == nil {
			break
		}
		total, ok := c.cfg.Level(sig, place, t)
		if !ok || total <= 0 {
			continue
		}
		for _, e := range ents {
			if _, done := out[e]; done || !strings.HasPrefix(e, "asn:") {
				continue
			}
			if v, ok := c.cfg.Level(sig, e, t); ok {
				out[e] = min(1, v/total)
			}
		}
	}
	for _, e := range ents {
		if e == place {
			out[e] = 1
		}
	}
	return out
}

// dropShare is the size of the drop and the share of the place it hit:
// the place-wide traffic drop if the place itself alerts, else the
// share-weighted drop of its networks; for a transit, the share of its
// destinations that are lossy; for what carries no volume (latency,
// routing only), the relative change of the worst member.
func (c *Correlator) dropShare(members []*alerting.Event, shares map[string]float64, place string) (drop, share float64) {
	best := func(sig string, entity string) (float64, bool) {
		for _, m := range members {
			if m.Signal == sig && m.Entity == entity && m.ChangePct < 0 {
				return -m.ChangePct / 100, true
			}
		}
		return 0, false
	}
	for _, sig := range []string{"traffic_bytes", "dns_queries"} {
		if d, ok := best(sig, place); ok {
			return min(d, 1), 1
		}
	}
	var wsum, w float64
	counted := map[string]bool{}
	for _, sig := range []string{"traffic_bytes", "dns_queries"} {
		for _, m := range members {
			if m.Signal != sig || counted[m.Entity] || m.ChangePct >= 0 {
				continue
			}
			s, ok := shares[m.Entity]
			if !ok {
				continue
			}
			counted[m.Entity] = true
			wsum += s * (-m.ChangePct / 100)
			w += s
		}
	}
	if w > 0 {
		return min(wsum/w, 1), min(w, 1)
	}
	// No volume signal: the member whose change weighs most.
	for _, m := range members {
		d, s := math.Abs(m.ChangePct)/100, shares[m.Entity]
		if m.Detector == "packet_loss" {
			d, s = 0, 1
			if judged := num(m.Details["destinations_judged"]); judged > 0 {
				d = num(m.Details["lossy_destinations"]) / judged
			}
		}
		if s == 0 && m.Entity == place {
			s = 1
		}
		if s == 0 {
			s = 0.1 // a network of unknown weight counts as a small one
		}
		if min(d, 1)*s > drop*share {
			drop, share = min(d, 1), s
		}
	}
	return drop, share
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return 0
}

func strs(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// transitScope names a transit event's sites and destinations.
func (c *Correlator) transitScope(o *alerting.Outage, members []*alerting.Event) {
	sites, dests := map[string]bool{}, map[string]bool{}
	for _, m := range members {
		if _, site, ok := strings.Cut(strings.TrimPrefix(m.Entity, "transit:"), "@"); ok && strings.HasPrefix(m.Entity, "transit:") {
			sites[site] = true
		}
		for _, s := range strs(m.Details["sites"]) {
			sites[s] = true
		}
		for _, d := range strs(m.Details["destinations"]) {
			dests[d] = true
		}
	}
	for s := range sites {
		o.Scope.Sites = append(o.Scope.Sites, s)
	}
	slices.Sort(o.Scope.Sites)
	for d := range dests {
		o.Scope.Destinations = append(o.Scope.Destinations, d)
	}
	slices.SortFunc(o.Scope.Destinations, comparePrefix)
}

func comparePrefix(a, b string) int {
	pa, ea := parsePrefix(a)
	pb, eb := parsePrefix(b)
	if ea && eb {
		return pa.Addr().Compare(pb.Addr())
	}
	return strings.Compare(a, b)
}

// cause says what the data shows came first or hit together: routes
// withdrawn before traffic fell, DNS failures of the network's own zones,
// many networks falling in the same few minutes (a power cut or a
// shutdown), one transit's loss.
func (c *Correlator) cause(members []*alerting.Event, shares map[string]float64) string {
	var firstTraffic, firstRouting time.Time
	var routing, zones []string
	netStart := map[string]time.Time{}
	for _, m := range members {
		switch k := KindOf(m.Signal); {
		case m.Detector == "packet_loss":
			return m.Summary
		case k == KindRouting:
			if firstRouting.IsZero() || m.Start.Before(firstRouting) {
				firstRouting = m.Start
			}
			if strings.HasPrefix(m.Entity, "asn:") {
				routing = appendOnce(routing, m.Entity)
			}
		case m.Detector == "dns_failure":
			if strings.HasPrefix(m.Entity, "zone:") {
				zones = appendOnce(zones, strings.TrimPrefix(m.Entity, "zone:"))
			}
		case k == KindTraffic || m.Signal == "dns_queries":
			if firstTraffic.IsZero() || m.Start.Before(firstTraffic) {
				firstTraffic = m.Start
			}
			if strings.HasPrefix(m.Entity, "asn:") && m.Signal == "traffic_bytes" {
				netStart[m.Entity] = m.Start
			}
		}
	}
	var dropped int
	for _, t := range netStart {
		if t.Sub(firstTraffic) <= 10*time.Minute {
			dropped++
		}
	}
	var parts []string
	if dropped >= 3 {
		parts = append(parts, fmt.Sprintf("%d networks lost traffic within minutes of each other (power-like or a shutdown)", dropped))
	}
	if !firstRouting.IsZero() && (firstTraffic.IsZero() || !firstRouting.After(firstTraffic)) {
		who := ""
		if len(routing) > 0 {
			names := make([]string, len(routing))
			for i, e := range routing {
				names[i] = c.name(e)
			}
			who = " by " + strings.Join(names, ", ")
		}
		when := firstRouting.UTC().Format("15:04 UTC")
		switch {
		case firstTraffic.IsZero():
		case firstTraffic.Equal(firstRouting):
			when += ", as traffic fell"
		default:
			when += ", before traffic fell at " + firstTraffic.UTC().Format("15:04")
		}
		parts = append(parts, "routes withdrawn"+who+" from "+when)
	}
	if len(zones) > 0 {
		parts = append(parts, "DNS failures for "+strings.Join(zones, ", "))
	}
	return strings.Join(parts, "; ")
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func receivers(members []*alerting.Event) []string {
	var out []string
	for _, m := range members {
		if len(m.Receivers) == 0 {
			return nil // someone routes to every sink
		}
		for _, r := range m.Receivers {
			out = appendOnce(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// title names what is out: the place when it dropped as a whole (or is no
// country), else its networks that lost traffic, in the country.
func (c *Correlator) title(place string, sc alerting.Scope, members []*alerting.Event) string {
	if !strings.HasPrefix(place, "country:") {
		return sc.Name
	}
	var nets []string
	for _, m := range members {
		if m.Entity == place && (KindOf(m.Signal) == KindTraffic || m.Signal == "dns_queries") {
			return sc.Name
		}
		if strings.HasPrefix(m.Entity, "asn:") && (KindOf(m.Signal) == KindTraffic || m.Signal == "dns_queries") {
			nets = appendOnce(nets, m.Entity)
		}
	}
	if len(nets) == 0 {
		for _, e := range sc.Entities {
			if strings.HasPrefix(e.Entity, "asn:") {
				nets = append(nets, e.Entity)
			}
		}
	}
	if len(nets) == 0 || len(nets) > 3 {
		return sc.Name
	}
	slices.SortFunc(nets, compareEntity)
	names := make([]string, len(nets))
	for i, e := range nets {
		names[i] = c.name(e)
	}
	return strings.Join(names, ", ") + " in " + sc.Name
}

// capSeverity bounds an event's severity by the highest of its members':
// impact measures how much of a place is hit, while a rule's severity is
// what its author says its alerts are worth, and grouping must not raise
// it. One probe's latency shift (a rule at info) is an info event however
// large the shift; an alert de-rated as unstable pages as info.
func capSeverity(sev string, members []*alerting.Event) string {
	top := 0
	for _, m := range members {
		top = max(top, alerting.SeverityRank(m.Severity))
	}
	if top > 0 && alerting.SeverityRank(sev) > top {
		return severityNames[top]
	}
	return sev
}
