package actions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/words"
)

// Rule names of the events the transit actions emit.
const (
	RuleShutdown = "transit-shutdown"
	RuleRefused  = "transit-shutdown-refused"
	RuleOverride = "transit-override"
)

// Who signs automatic actions in the audit log.
const Who = "outagewatch"

// Transits shuts and restores transit sessions on packet-loss alerts. It
// is an alerting.Sink, so it plugs into the alert outbox like any receiver:
// a failed gobgp call returns an error and the outbox retries the event,
// which is safe because a transit already down is left alone.
type Transits struct {
	cfg      *Config
	speakers map[string]Speaker // by site
	audit    *Audit
	emit     func(*alerting.Event)
	// Now is the wall clock for manual actions.
	Now func() time.Time
	// Owns says whether this instance decides for a site (see package
	// decider); nil decides for every site.
	Owns func(site string) bool
	// RuleModes, if set, caps the mode by the alert rule's own actions
	// setting (rule name → off, dry-run or enforce): the stricter of the
	// two applies, and a rule not listed acts as off. See ModesFromRules.
	RuleModes map[string]string
	// Counter, if set, counts actions by op (shutdown, restore, refused,
	// override) and mode.
	Counter *prometheus.CounterVec

	mu  sync.Mutex
	now time.Time // the latest event time seen
}

type key struct {
	site string
	asn  uint32
}

type tstate struct {
	down   bool
	mode   string
	action string
	alert  string
	last   time.Time
	keep   string
	// keepSince is when the override in force was set.
	keepSince time.Time
	// lastShut is the time of the latest shutdown.
	lastShut time.Time
	// resolved is when the alert that shut it resolved (zero while it
	// fires): the start of the hold.
	resolved time.Time
	// before is last as it was before the latest shutdown, for a shutdown
	// that failed: a failed attempt must not start a cool-down that would
	// refuse the retry.
	before time.Time
}

// NewTransits returns the actuator. speakers maps a site to the speaker
// holding its sessions (needed in enforce mode only); emit receives the
// action events (nil drops them).
func NewTransits(cfg *Config, speakers map[string]Speaker, audit *Audit, emit func(*alerting.Event)) (*Transits, error) {
	if audit == nil {
		audit = &Audit{ids: map[string]bool{}}
	}
	if emit == nil {
		emit = func(*alerting.Event) {}
	}
	if cfg.Mode == ModeEnforce {
		for _, n := range cfg.SiteNames() {
			if speakers[n] == nil {
				return nil, fmt.Errorf("actions: enforce mode: no gobgp speaker for site %s", n)
			}
		}
	}
	return &Transits{cfg: cfg, speakers: speakers, audit: audit, emit: emit, Now: time.Now}, nil
}

// Name implements alerting.Sink.
func (t *Transits) Name() string { return "transit-actions" }

// state derives every transit's state from the audit log, so that records
// written by another process (an operator's undo) count at once.
func (t *Transits) state() (map[key]*tstate, error) {
	if _, err := t.audit.sync(); err != nil {
		return nil, err
	}
	// What another process appended (an operator's undo or override)
	// pages from here, as the actions of this one do.
	foreign := t.audit.foreign
	t.audit.foreign = nil
	st := map[key]*tstate{}
	get := func(r *Record) *tstate {
		k := key{r.Site, r.ASN}
		if st[k] == nil {
			st[k] = &tstate{}
		}
		return st[k]
	}
	for i := range t.audit.recs {
		r := &t.audit.recs[i]
		s := get(r)
		keptFrom := s.keepSince
		switch r.Op {
		case OpShutdown:
			s.before = s.last
			s.down, s.mode, s.action, s.alert, s.last, s.resolved = true, r.Mode, r.ID, r.Alert, r.Time, time.Time{}
		case OpLossResolved:
			if s.down && r.Alert == s.alert {
				s.resolved = r.Time
			}
		case OpLossBack:
			if s.down && r.Alert == s.alert {
				s.resolved = time.Time{}
			}
		case OpRestore:
			if r.Of == s.action {
				s.down, s.last = false, r.Time
			}
		case OpRefused:
			if r.Of != "" && r.Of == s.action { // the shutdown itself failed
				s.down, s.last = false, s.before
			}
		case OpOverride:
			if s.keep == "" || s.keep == "auto" || r.Keep == "auto" {
				s.keepSince = r.Time
			}
			s.keep = r.Keep
		}
		if r.Op != OpLossResolved && r.Op != OpLossBack && slices.ContainsFunc(foreign, func(f Record) bool { return f.ID == r.ID }) {
			start := r.Time
			switch {
			case r.Op == OpRestore:
				start = s.lastShut
			case r.Op == OpOverride && r.Keep != "auto":
				start = s.keepSince
			case r.Op == OpOverride:
				start = keptFrom
			}
			t.emitRecord(r, nil, start)
		}
		if r.Op == OpShutdown {
			s.lastShut = r.Time
		}
	}
	return st, nil
}

// Send implements alerting.Sink: a firing packet-loss alert on a transit
// shuts that transit at the sites it names; its resolution starts the hold
// timer. Any event advances the clock that restores transits whose hold has
// passed.
func (t *Transits) Send(ctx context.Context, ev *alerting.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A shutdown ends with the resolve of the alert that made it,
	// whatever the rules now say of that alert's rule (taken out, or its
	// actions turned off, while the transit was down): else only an undo
	// by hand would bring the transit back.
	mode := t.mode(ev.Rule)
	if mode == ModeOff && ev.Status != alerting.Resolved {
		return nil
	}
	var errs []error
	if ev.At.After(t.now) {
		t.now = ev.At
	}
	if err := t.restoreDue(ctx); err != nil {
		errs = append(errs, err)
	}
	asn, sites, ok := t.match(ev)
	if !ok {
		return errors.Join(errs...)
	}
	if err := t.noteLoss(ev); err != nil {
		return errors.Join(append(errs, err)...)
	}
	switch ev.Status {
	case alerting.Firing:
		if ev.Muted != "" {
			// A silence (maintenance) or a feed fault explains the
			// loss: nothing to act on.
			slog.Info("transit actions: alert muted, no shutdown", "alert", ev.ID, "muted", ev.Muted)
			break
		}
		for _, site := range sites {
			if t.Owns != nil && !t.Owns(site) {
				continue
			}
			if err := t.shutdown(ctx, ev, site, asn, mode); err != nil {
				errs = append(errs, err)
			}
		}
	case alerting.Resolved:
		if err := t.restoreDue(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// noteLoss records, for the transits ev's alert shut, that the loss
// resolved (the hold starts) or came back (the hold is off). The note goes
// to the audit log, so a restart during the hold keeps it.
func (t *Transits) noteLoss(ev *alerting.Event) error {
	st, err := t.state()
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(st) {
		s := st[k]
		if !s.down || s.alert != ev.ID {
			continue
		}
		var op string
		switch {
		case ev.Status == alerting.Resolved && s.resolved.IsZero():
			op = OpLossResolved
		case ev.Status == alerting.Firing && !s.resolved.IsZero():
			op = OpLossBack
		default:
			continue
		}
		rec := Record{Time: ev.At, Who: Who, Op: op, Mode: s.mode, Site: k.site, ASN: k.asn, Alert: ev.ID, Of: s.action, Why: ev.Status}
		if err := t.audit.append(&rec); err != nil {
			return err
		}
	}
	return nil
}

// Advance moves the clock to now without an event (the live service calls
// it as its watermark moves) and restores what is due.
func (t *Transits) Advance(ctx context.Context, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.After(t.now) {
		t.now = now
	}
	// Read what other processes appended even with no hold to serve,
	// so that their actions page.
	if _, err := t.state(); err != nil {
		return err
	}
	return t.restoreDue(ctx)
}

// match says whether ev is a packet-loss alert this actuator acts on, for
// which transit and at which configured sites.
func (t *Transits) match(ev *alerting.Event) (uint32, []string, bool) {
	if ev.Detector != "packet_loss" || (len(t.cfg.Rules) > 0 && !slices.Contains(t.cfg.Rules, ev.Rule)) {
		return 0, nil, false
	}
	rest, ok := strings.CutPrefix(ev.Entity, "transit:")
	if !ok {
		return 0, nil, false
	}
	asText, site, perSite := strings.Cut(rest, "@")
	a, err := strconv.ParseUint(asText, 10, 32)
	if err != nil {
		return 0, nil, false
	}
	var sites []string
	if perSite {
		sites = []string{site}
	} else {
		sites = detailSites(ev.Details["sites"])
	}
	var known []string
	for _, s := range sites {
		if t.cfg.transit(s, uint32(a)) != nil {
			known = append(known, s)
		}
	}
	sort.Strings(known)
	return uint32(a), known, true
}

// detailSites reads the "sites" detail as the detector sets it ([]string)
// or as it reads back from JSON ([]any).
func detailSites(v any) []string {
	switch s := v.(type) {
	case []string:
		return s
	case []any:
		var out []string
		for _, x := range s {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// communication is the RFC 8203 shutdown communication: short (RFC 9003
// allows 255 bytes; gobgp sends up to 128), naming the alert.
func communication(asn uint32, site, alertID string) string {
	return fmt.Sprintf("outagewatch: packet loss via AS%d at %s, alert %s", asn, site, alertID)
}

var strictness = map[string]int{ModeOff: 0, ModeDryRun: 1, ModeEnforce: 2}

// mode is the mode for an alert of rule: the configuration's, capped by the
// rule's own setting when RuleModes is set.
// SetRuleModes replaces RuleModes (the rules reloaded) from the next
// alert on; nil leaves the configuration's mode uncapped.
func (t *Transits) SetRuleModes(m map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.RuleModes = m
}

func (t *Transits) mode(rule string) string {
	m := t.cfg.Mode
	if t.RuleModes == nil {
		return m
	}
	rm, ok := t.RuleModes[rule]
	if !ok {
		return ModeOff
	}
	if strictness[rm] < strictness[m] {
		return rm
	}
	return m
}

func (t *Transits) shutdown(ctx context.Context, ev *alerting.Event, site string, asn uint32, mode string) error {
	st, err := t.state()
	if err != nil {
		return err
	}
	tr := t.cfg.transit(site, asn)
	s := st[key{site, asn}]
	if s == nil {
		s = &tstate{}
	}
	if s.down {
		return nil
	}
	rec := Record{Time: ev.At, Who: Who, Mode: mode, Site: site, ASN: asn, Transit: tr.Name, Sessions: tr.Sessions, Alert: ev.ID}
	refuse := func(why string) error {
		rec.Op, rec.Why = OpRefused, why
		if err := t.audit.append(&rec); err != nil {
			return err
		}
		slog.Warn("transit shutdown refused", "site", site, "asn", asn, "reason", why, "alert", ev.ID)
		t.emitRecord(&rec, ev, rec.Time)
		return nil
	}
	switch {
	case s.keep == "up":
		return refuse("manual override keeps it up")
	case !s.last.IsZero() && ev.At.Sub(s.last) < t.cfg.Cooldown:
		return refuse(fmt.Sprintf("cool-down: last action %s ago, cool-down %s", ev.At.Sub(s.last), t.cfg.Cooldown))
	}
	up, downHere := 0, 0
	var notCarrying []string
	for _, o := range t.cfg.Sites[site].Transits {
		switch os := st[key{site, o.ASN}]; {
		case os != nil && os.down:
			downHere++
		case o.ASN != asn && mode == ModeEnforce && !t.carrying(ctx, site, o):
			// Down for another reason (a fibre cut, the provider's
			// maintenance): it carries nothing, so it does not count.
			notCarrying = append(notCarrying, fmt.Sprintf("AS%d", o.ASN))
		default:
			up++
		}
	}
	switch {
	case up <= 1:
		why := fmt.Sprintf("AS%d is the last transit up at %s", asn, site)
		if len(notCarrying) > 0 {
			why += fmt.Sprintf(" (%s: no session established)", strings.Join(notCarrying, ", "))
		}
		return refuse(why)
	case downHere >= t.cfg.MaxDownPerSite:
		return refuse(fmt.Sprintf("%d transit(s) already down at %s, limit %d", downHere, site, t.cfg.MaxDownPerSite))
	}
	rec.Op = OpShutdown
	rec.Why = ev.Summary
	if rec.Why == "" {
		rec.Why = "packet loss alert " + ev.ID
	}
	if err := t.audit.append(&rec); err != nil {
		return err
	}
	if mode == ModeEnforce {
		msg := communication(asn, site, ev.ID)
		for _, n := range tr.Sessions {
			if err := t.speakers[site].DisablePeer(ctx, n, msg); err != nil {
				return t.failed(ctx, &rec, err)
			}
		}
	}
	slog.Info("transit shut", "mode", rec.Mode, "site", site, "asn", asn, "sessions", tr.Sessions, "action", rec.ID, "alert", ev.ID)
	t.emitRecord(&rec, ev, rec.Time)
	return nil
}

// carrying reports whether any of tr's sessions at site is established on
// the speaker. A speaker that cannot say (an error) counts the transit as
// carrying, so a monitoring glitch cannot block every shutdown; the
// configured state still guards the last transit.
func (t *Transits) carrying(ctx context.Context, site string, tr *Transit) bool {
	sp, ok := t.speakers[site].(SessionChecker)
	if !ok {
		return true
	}
	for _, n := range tr.Sessions {
		up, err := sp.Established(ctx, n)
		if err != nil {
			slog.Warn("actions: session state unknown", "site", site, "neighbor", n, "err", err)
			return true
		}
		if up {
			return true
		}
	}
	return false
}

// failed records a shutdown that did not complete and re-enables the
// sessions it did shut, so that a half-done action does not linger.
func (t *Transits) failed(ctx context.Context, rec *Record, cause error) error {
	for _, n := range rec.Sessions {
		_ = t.speakers[rec.Site].EnablePeer(ctx, n)
	}
	f := Record{Time: rec.Time, Who: Who, Op: OpRefused, Mode: rec.Mode, Site: rec.Site, ASN: rec.ASN, Transit: rec.Transit,
		Sessions: rec.Sessions, Alert: rec.Alert, Of: rec.ID, Why: "gobgp call failed", Error: cause.Error()}
	if err := t.audit.append(&f); err != nil {
		return errors.Join(cause, err)
	}
	t.emitRecord(&f, nil, f.Time)
	return fmt.Errorf("transit shutdown AS%d at %s: %w", rec.ASN, rec.Site, cause)
}

// restoreDue brings back every automatically shut transit whose alert has
// stayed resolved for the hold time.
func (t *Transits) restoreDue(ctx context.Context) error {
	if t.cfg.Hold == 0 {
		return nil
	}
	st, err := t.state()
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range sortedKeys(st) {
		s := st[k]
		at := s.resolved
		if !s.down || at.IsZero() || s.keep == "down" || t.now.Before(at.Add(t.cfg.Hold)) || (t.Owns != nil && !t.Owns(k.site)) {
			continue
		}
		why := fmt.Sprintf("loss resolved at %s, held %s", at.Format(time.RFC3339), t.cfg.Hold)
		if _, err := t.restore(ctx, k, s, at.Add(t.cfg.Hold), t.now, Who, why); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// restore brings a transit back: at is the record's time, made when it
// was carried out where that differs (restoreDue's late check), else zero.
func (t *Transits) restore(ctx context.Context, k key, s *tstate, at, made time.Time, who, why string) (Record, error) {
	tr := t.cfg.transit(k.site, k.asn)
	if tr == nil {
		return Record{}, fmt.Errorf("AS%d at %s is no longer configured", k.asn, k.site)
	}
	rec := Record{Time: at, Who: who, Op: OpRestore, Mode: s.mode, Site: k.site, ASN: k.asn, Transit: tr.Name,
		Sessions: tr.Sessions, Alert: s.alert, Of: s.action, Why: why}
	if made.After(at) {
		rec.Made = made
	}
	if s.mode == ModeEnforce {
		sp := t.speakers[k.site]
		if sp == nil {
			return Record{}, fmt.Errorf("no gobgp speaker for site %s", k.site)
		}
		for _, n := range tr.Sessions {
			if err := sp.EnablePeer(ctx, n); err != nil {
				return Record{}, fmt.Errorf("restore AS%d at %s: %w", k.asn, k.site, err)
			}
		}
	}
	if err := t.audit.append(&rec); err != nil {
		return Record{}, err
	}
	slog.Info("transit restored", "mode", rec.Mode, "site", k.site, "asn", k.asn, "who", who, "action", rec.ID, "of", s.action)
	t.emitRecord(&rec, nil, s.last)
	return rec, nil
}

// Undo reverses a shutdown by its action ID.
func (t *Transits) Undo(ctx context.Context, id, who string) (Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.state()
	if err != nil {
		return Record{}, err
	}
	for _, k := range sortedKeys(st) {
		s := st[k]
		if s.action == id {
			if !s.down {
				return Record{}, fmt.Errorf("action %s: AS%d at %s is already restored", id, k.asn, k.site)
			}
			return t.restore(ctx, k, s, t.Now().UTC(), time.Time{}, who, "undone by hand")
		}
	}
	return Record{}, fmt.Errorf("action %s: no shutdown with that ID", id)
}

// Override sets a manual override that wins over the automatic actions:
// "up" keeps the transit up (restoring it now if it is down), "down" keeps
// an automatic shutdown from being undone when the loss resolves, "auto"
// clears the override.
func (t *Transits) Override(ctx context.Context, site string, asn uint32, keep, who string) (Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains([]string{"up", "down", "auto"}, keep) {
		return Record{}, fmt.Errorf("override %q: want up, down or auto", keep)
	}
	tr := t.cfg.transit(site, asn)
	if tr == nil {
		return Record{}, fmt.Errorf("AS%d at %s is not configured", asn, site)
	}
	st, err := t.state()
	if err != nil {
		return Record{}, err
	}
	now := t.Now().UTC()
	if s := st[key{site, asn}]; keep == "up" && s != nil && s.down {
		if _, err := t.restore(ctx, key{site, asn}, s, now, time.Time{}, who, "override: keep up"); err != nil {
			return Record{}, err
		}
	}
	rec := Record{Time: now, Who: who, Op: OpOverride, Site: site, ASN: asn, Transit: tr.Name, Keep: keep, Why: "manual override"}
	if err := t.audit.append(&rec); err != nil {
		return Record{}, err
	}
	start := now
	if s := st[key{site, asn}]; s != nil && s.keep != "" && s.keep != "auto" {
		start = s.keepSince
	}
	t.emitRecord(&rec, nil, start)
	return rec, nil
}

// emitRecord sends an action as an alert event of its own, so that it
// pages like any alert: a shutdown fires (rule transit-shutdown) and its
// restore resolves the same ID; an override keeping a transit up or down
// fires (rule transit-override) until "auto" resolves it; each refusal is
// a one-off warning with an ID of its own. start is when the alert began:
// the shutdown's or the override's time.
func (t *Transits) emitRecord(r *Record, cause *alerting.Event, start time.Time) {
	if t.Counter != nil {
		t.Counter.WithLabelValues(r.Op, r.Mode).Inc()
	}
	entity := fmt.Sprintf("transit:%d@%s", r.ASN, r.Site)
	rule, status := RuleShutdown, alerting.Firing
	id := alerting.AlertID(rule, "packet_loss", entity)
	switch r.Op {
	case OpRestore:
		status = alerting.Resolved
	case OpRefused:
		rule = RuleRefused
		id = alerting.AlertID(rule, "packet_loss", entity+"/"+r.ID)
	case OpOverride:
		rule = RuleOverride
		id = alerting.AlertID(rule, "packet_loss", entity)
		if r.Keep == "auto" {
			status = alerting.Resolved
		}
	}
	labels := map[string]string{"site": r.Site, "asn": strconv.Itoa(int(r.ASN))}
	if r.Mode != "" {
		labels["mode"] = r.Mode
	}
	ev := &alerting.Event{
		ID: id, Kind: alerting.KindAlert, Status: status, Rule: rule, Detector: "action",
		Signal: "packet_loss", Entity: entity, Labels: labels,
		Start: start, At: r.Time, Severity: "warning",
		Actions: []string{fmt.Sprintf("%s %s AS%d at %s (%s)", r.Mode, r.Op, r.ASN, r.Site, r.ID)},
		Details: map[string]any{"action": r.ID, "op": r.Op, "who": r.Who, "why": r.Why, "sessions": r.Sessions, "alert": r.Alert},
	}
	verb := map[string]string{OpShutdown: "shut", OpRestore: "restored", OpRefused: "refused to shut"}[r.Op]
	if r.Mode == ModeDryRun {
		verb = "dry-run: would have " + verb
	}
	ev.Summary = fmt.Sprintf("%s AS%d %s at %s (%s): %s", verb, r.ASN, r.Transit, r.Site, words.Plural(len(r.Sessions), "session"), r.Why)
	if r.Op == OpOverride {
		ev.Actions = []string{fmt.Sprintf("override AS%d at %s: keep %s (%s)", r.ASN, r.Site, r.Keep, r.ID)}
		ev.Details["keep"] = r.Keep
		ev.Summary = fmt.Sprintf("override by %s: AS%d %s at %s kept %s", r.Who, r.ASN, r.Transit, r.Site, r.Keep)
		if r.Keep == "auto" {
			ev.Summary = fmt.Sprintf("override by %s cleared: AS%d %s at %s back to automatic actions", r.Who, r.ASN, r.Transit, r.Site)
		}
	}
	if r.Undo != "" {
		ev.Details["undo"] = r.Undo
	}
	if r.Error != "" {
		ev.Details["error"] = r.Error
	}
	if status == alerting.Resolved {
		end := r.Time
		ev.End = &end
	}
	if cause != nil {
		ev.Observed, ev.Baseline = cause.Observed, cause.Baseline
	}
	t.emit(ev)
}

// ModesFromRules maps each rule of a rules set to its actions setting, for
// RuleModes.
func ModesFromRules(set *rules.Set) map[string]string {
	m := map[string]string{}
	for _, r := range set.Rules {
		m[r.Name] = r.Actions
	}
	return m
}

// NewCounter returns the actions counter, registered with reg.
func NewCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_actions_total",
		Help: "Transit actions taken or refused, by op (shutdown, restore, refused) and mode (dry-run, enforce)."}, []string{"op", "mode"})
	reg.MustRegister(c)
	return c
}

// Records returns the audit log.
func (t *Transits) Records() ([]Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.audit.sync(); err != nil {
		return nil, err
	}
	return append([]Record(nil), t.audit.recs...), nil
}

func sortedKeys(m map[key]*tstate) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].site != ks[j].site {
			return ks[i].site < ks[j].site
		}
		return ks[i].asn < ks[j].asn
	})
	return ks
}
