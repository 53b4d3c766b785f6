// Package silence holds maintenance windows and silences for operators who
// run outagewatch without an Alertmanager: matchers on an alert's entity,
// rule, detector and labels, a start and an end, who set it and why. A
// silenced alert is still recorded and listed, marked as silenced; it pages
// nobody and joins no outage event.
//
// Windows are judged in event time (the alert's At), so a replay of a
// maintenance night is silenced exactly as the live service was.
package silence

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

// Silence is one maintenance window or silence. Every matcher that is set
// must match; Entity and the label values may be shell patterns
// ("country:*", "asn:50*").
type Silence struct {
	ID       string            `json:"id" yaml:"id"`
	Entity   string            `json:"entity,omitempty" yaml:"entity"`
	Rule     string            `json:"rule,omitempty" yaml:"rule"`
	Detector string            `json:"detector,omitempty" yaml:"detector"`
	Labels   map[string]string `json:"labels,omitempty" yaml:"labels"`
	Start    time.Time         `json:"start" yaml:"start"`
	End      time.Time         `json:"end" yaml:"end"`
	Author   string            `json:"author" yaml:"author"`
	Comment  string            `json:"comment" yaml:"comment"`
	// FromConfig marks silences set in the config file: the API lists
	// them but cannot delete them (the next start would bring them back).
	FromConfig bool `json:"from_config,omitempty" yaml:"-"`
}

// Validate reports the first problem, as "field: reason".
func (s *Silence) Validate() error {
	if s.Entity == "" && s.Rule == "" && s.Detector == "" && len(s.Labels) == 0 {
		return errors.New("matchers: at least one of entity, rule, detector, labels is required (a silence of everything is a mistake)")
	}
	for _, p := range append([]string{s.Entity, s.Rule, s.Detector}, labelValues(s.Labels)...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	if s.Start.IsZero() || s.End.IsZero() {
		return errors.New("start, end: both are required")
	}
	if !s.End.After(s.Start) {
		return errors.New("end: must be after start")
	}
	if strings.TrimSpace(s.Author) == "" {
		return errors.New("author: required")
	}
	if strings.TrimSpace(s.Comment) == "" {
		return errors.New("comment: required (say why, for whoever wonders where the pages went)")
	}
	return nil
}

func labelValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Matches says whether s silences ev at ev's event time.
func (s *Silence) Matches(ev *alerting.Event) bool {
	if ev.At.Before(s.Start) || !ev.At.Before(s.End) {
		return false
	}
	match := func(pat, v string) bool {
		if pat == "" {
			return true
		}
		ok, _ := path.Match(pat, v)
		return ok
	}
	if !match(s.Entity, ev.Entity) || !match(s.Rule, ev.Rule) || !match(s.Detector, ev.Detector) {
		return false
	}
	for k, pat := range s.Labels {
		if !match(pat, ev.Labels[k]) {
			return false
		}
	}
	return true
}

// Store is the set of silences: those of the config, and those set through
// the API, persisted to a file so they survive a restart. Safe for
// concurrent use (the HTTP handlers write, the pipeline reads).
type Store struct {
	mu   sync.RWMutex
	file string
	conf []Silence
	api  []Silence
}

// Open loads the silences persisted in file (none if it does not exist)
// and adds the config's. file may be empty: API silences then live in
// memory only.
func Open(file string, fromConfig []Silence) (*Store, error) {
	st := &Store{file: file}
	for i, s := range fromConfig {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("silences[%d]: %w", i, err)
		}
		if s.ID == "" {
			s.ID = fmt.Sprintf("config-%d", i+1)
		}
		s.FromConfig = true
		st.conf = append(st.conf, s)
	}
	if file == "" {
		return st, nil
	}
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("silences: %w", err)
	}
	if err := json.Unmarshal(b, &st.api); err != nil {
		return nil, fmt.Errorf("silences: %s: %w", file, err)
	}
	return st, nil
}

// Add validates s, gives it an ID, persists it and returns it.
func (st *Store) Add(s Silence) (Silence, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return s, err
	}
	s.ID, s.FromConfig = hex.EncodeToString(id[:]), false
	st.mu.Lock()
	defer st.mu.Unlock()
	next := append(slices.Clone(st.api), s)
	if err := st.save(next); err != nil {
		return s, err
	}
	st.api = next
	return s, nil
}

// ErrNotFound is returned by Delete for an unknown ID.
var ErrNotFound = errors.New("silence not found")

// ErrFromConfig is returned by Delete for a silence of the config file.
var ErrFromConfig = errors.New("silence is set in the config file; remove it there")

// Delete removes an API silence.
func (st *Store) Delete(id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range st.conf {
		if s.ID == id {
			return ErrFromConfig
		}
	}
	i := slices.IndexFunc(st.api, func(s Silence) bool { return s.ID == id })
	if i < 0 {
		return ErrNotFound
	}
	next := slices.Delete(slices.Clone(st.api), i, i+1)
	if err := st.save(next); err != nil {
		return err
	}
	st.api = next
	return nil
}

// List returns every silence, config first, then by start.
func (st *Store) List() []Silence {
	st.mu.RLock()
	defer st.mu.RUnlock()
	api := slices.Clone(st.api)
	slices.SortStableFunc(api, func(a, b Silence) int { return a.Start.Compare(b.Start) })
	return append(slices.Clone(st.conf), api...)
}

// Mutes implements correlate.Muter.
func (st *Store) Mutes(ev *alerting.Event) (string, bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	for _, l := range [][]Silence{st.conf, st.api} {
		for i := range l {
			if l[i].Matches(ev) {
				return "silence " + l[i].ID, true
			}
		}
	}
	return "", false
}

func (st *Store) save(l []Silence) error {
	if st.file == "" {
		return nil
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.file), 0o755); err != nil {
		return fmt.Errorf("silences: %w", err)
	}
	tmp := st.file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("silences: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, st.file)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("silences: save: %w", err)
	}
	return nil
}
