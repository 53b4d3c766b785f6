// Package rules loads the YAML file that says which detector runs on which
// signals and entities, with what settings, at what severity, to which
// receivers, and which actions it may take. A bad file fails at load with
// the file, the line and the reason, so that an operator never finds out
// from a silent detector.
package rules

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/examples"
	"github.com/outagewatch/outagewatch/internal/yamlerr"
	"github.com/outagewatch/outagewatch/obs"
)

// The shipped rules: one file per input, loaded in name order, so each
// input's rules sit next to each other and can be copied on their own.
//
//go:embed default/*.yaml
var defaultFS embed.FS

// Action modes.
const (
	ActionsOff     = "off"
	ActionsDryRun  = "dry-run"
	ActionsEnforce = "enforce"
)

// Severities, lowest first.
var Severities = []string{"info", "warning", "critical"}

// Rule binds a detector to the series it watches.
type Rule struct {
	Name     string
	Detector string
	Params   detectors.Params
	// Signals the rule reads; Entities and Exclude are glob patterns over
	// entity names ("country:*", "asn:5089").
	Signals   []obs.Signal
	Entities  []string
	Exclude   []string
	Severity  string
	Receivers []string
	// Actions says whether the rule's actions are off, logged only
	// (dry-run), or carried out (enforce).
	Actions string
	Labels  map[string]string
	// File and Line locate the rule for messages.
	File string
	Line int
}

// Matches reports whether the rule watches signal sig of entity e.
func (r *Rule) Matches(sig obs.Signal, e string) bool {
	if !slices.Contains(r.Signals, sig) {
		return false
	}
	for _, p := range r.Exclude {
		if ok, _ := path.Match(p, e); ok {
			return false
		}
	}
	for _, p := range r.Entities {
		if ok, _ := path.Match(p, e); ok {
			return true
		}
	}
	return false
}

// Set is a loaded rules file.
type Set struct {
	File  string
	Rules []*Rule
	// Signals lists the signals the files declared, in file order.
	Signals []obs.Signal
	// Severity maps outage events' impact to their severity: the one
	// severity: block of the files, or the shipped rules' block when none
	// has one (nil only for a set parsed by Parse without one).
	Severity *EventSeverity
}

// Default returns the rules that ship with outagewatch. They name the
// signals of every input (flows, DNS, BGP, quality), which the inputs'
// packages register: a program imports the inputs it reads (cmd/outagewatch
// imports them all), and an unknown signal is a load error naming the file
// and line, so rules never watch a signal no input will send.
func Default() (*Set, error) {
	files, err := fs.Glob(defaultFS, "default/*.yaml")
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		files[i] = "rules/" + f
	}
	return merge("rules/default", files, func(f string) ([]byte, error) {
		return defaultFS.ReadFile(strings.TrimPrefix(f, "rules/"))
	})
}

// WriteDefault writes the shipped rules into dir, one file per input as
// they ship (10-traffic.yaml, …), for an operator to edit and load with
// --rules dir: the binary carries them, and a deployment without the
// source needs them to start from. A file already in dir is left alone
// and is an error, unless overwrite is set. It returns the paths written.
func WriteDefault(dir string, overwrite bool) ([]string, error) {
	files, err := fs.Glob(defaultFS, "default/*.yaml")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	var written []string
	for _, f := range files {
		b, err := defaultFS.ReadFile(f)
		if err != nil {
			return written, err
		}
		p := filepath.Join(dir, path.Base(f))
		out, err := os.OpenFile(p, flags, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return written, fmt.Errorf("rules: %s: %w: not overwritten", p, fs.ErrExist)
		}
		if err != nil {
			return written, fmt.Errorf("rules: %w", err)
		}
		_, err = out.Write(b)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, fmt.Errorf("rules: %w", err)
		}
		written = append(written, p)
	}
	return written, nil
}

// LoadAll loads several rules files (or directories of *.yaml and *.yml,
// in name order) as one set. A directory with no such files, or a set with
// no rule at all, is refused: either would start a service that judges
// nothing and says nothing of it.
func LoadAll(paths ...string) (*Set, error) {
	var files []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			more, _ := filepath.Glob(filepath.Join(p, "*.yaml"))
			yml, _ := filepath.Glob(filepath.Join(p, "*.yml"))
			if more = append(more, yml...); len(more) == 0 {
				return nil, fmt.Errorf("rules: %s: no *.yaml or *.yml files in the directory", p)
			}
			slices.Sort(more)
			files = append(files, more...)
			continue
		}
		files = append(files, p)
	}
	name := strings.Join(paths, ",")
	set, err := merge(name, files, readFile)
	if err != nil {
		return nil, err
	}
	if len(set.Rules) == 0 {
		return nil, fmt.Errorf("rules: %s: no rules, only signals or severity", name)
	}
	return withShippedSeverity(set)
}

// withShippedSeverity gives a set without a severity: block the shipped
// one, so that a team that copies only its detector rules keeps the
// default event severities.
func withShippedSeverity(set *Set) (*Set, error) {
	if set.Severity != nil {
		return set, nil
	}
	var err error
	set.Severity, err = shippedSeverity()
	return set, err
}

// merge loads files in order into one set; a rule name may appear once.
// The signals of every file are declared before any rule is read, so that
// a rule may use a signal that a signals file later in name order declares.
func merge(name string, files []string, read func(string) ([]byte, error)) (*Set, error) {
	out := &Set{File: name}
	defined := map[string]string{}
	docs := make([][]byte, len(files))
	for i, f := range files {
		b, err := read(f)
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		docs[i] = b
		if _, err := parseSignals(f, b); err != nil {
			return nil, err
		}
	}
	for i, f := range files {
		set, err := Parse(f, docs[i])
		if err != nil {
			return nil, err
		}
		for _, s := range set.Signals {
			if !slices.Contains(out.Signals, s) {
				out.Signals = append(out.Signals, s)
			}
		}
		if set.Severity != nil {
			if out.Severity != nil {
				return nil, &Error{f, set.Severity.Line, fmt.Sprintf("severity already defined in %s:%d", out.Severity.File, out.Severity.Line)}
			}
			out.Severity = set.Severity
		}
		for _, r := range set.Rules {
			if prev, dup := defined[r.Name]; dup {
				return nil, &Error{r.File, r.Line, fmt.Sprintf("rule %q already defined in %s", r.Name, prev)}
			}
			defined[r.Name] = r.File
			out.Rules = append(out.Rules, r)
		}
	}
	return out, nil
}

// readFile reads a rules file from disk or, where there is none, the
// copy of an example the binary bundles (package examples).
func readFile(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		if eb, ok := examples.Read(file); ok {
			return eb, nil
		}
	}
	return b, err
}

// Load reads and validates a rules file.
func Load(file string) (*Set, error) {
	b, err := readFile(file)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	set, err := Parse(file, b)
	if err != nil {
		return nil, err
	}
	return withShippedSeverity(set)
}

// Error is a problem at a place in a rules file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

type rawRule struct {
	Name      string            `yaml:"name"`
	Detector  string            `yaml:"detector"`
	Signals   []string          `yaml:"signals"`
	Entities  []string          `yaml:"entities"`
	Exclude   []string          `yaml:"exclude"`
	Severity  string            `yaml:"severity"`
	Receivers []string          `yaml:"receivers"`
	Actions   string            `yaml:"actions"`
	Labels    map[string]string `yaml:"labels"`
	Params    yaml.Node         `yaml:"params"`
}

// Parse validates a rules document.
func Parse(file string, b []byte) (*Set, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{file, 1, "empty rules file: want a top-level 'rules:' list"}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &Error{file, top.Line, "want a mapping with a 'rules:' list"}
	}
	set := &Set{File: file}
	var list, sigs *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "rules":
			list = v
		case "signals":
			sigs = v
		case "severity":
			var err error
			if set.Severity, err = parseSeverity(file, k, v); err != nil {
				return nil, err
			}
		default:
			return nil, &Error{file, k.Line, yamlerr.Unknown(k.Value, "", []string{"signals", "severity", "rules"})}
		}
	}
	if sigs != nil {
		var err error
		if set.Signals, err = declareSignals(file, sigs); err != nil {
			return nil, err
		}
	}
	if list == nil && (sigs != nil || set.Severity != nil) {
		return set, nil // a signals or severity file
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, &Error{file, top.Line, "'rules:' must be a list"}
	}
	names := map[string]int{}
	for _, n := range list.Content {
		r, err := parseRule(file, n)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[r.Name]; dup {
			return nil, &Error{file, n.Line, fmt.Sprintf("rule %q already defined at line %d", r.Name, prev)}
		}
		names[r.Name] = n.Line
		set.Rules = append(set.Rules, r)
	}
	return set, nil
}

func parseRule(file string, n *yaml.Node) (*Rule, error) {
	if n.Kind != yaml.MappingNode {
		return nil, &Error{file, n.Line, "each rule must be a mapping"}
	}
	if err := checkKeys(file, n, reflect.TypeOf(rawRule{}), "rule"); err != nil {
		return nil, err
	}
	var raw rawRule
	if err := n.Decode(&raw); err != nil {
		return nil, yamlError(file, err)
	}
	at := func(key string) int { return keyLine(n, key) }
	fail := func(key, format string, args ...any) error {
		return &Error{file, at(key), fmt.Sprintf("rule %q: ", raw.Name) + fmt.Sprintf(format, args...)}
	}
	if raw.Name == "" {
		return nil, &Error{file, n.Line, "rule without a name"}
	}
	r := &Rule{Name: raw.Name, Detector: raw.Detector, Entities: raw.Entities, Exclude: raw.Exclude,
		Severity: raw.Severity, Receivers: raw.Receivers, Actions: raw.Actions, Labels: raw.Labels, File: file, Line: n.Line}
	p, err := detectors.NewParams(raw.Detector)
	if err != nil {
		return nil, fail("detector", "%v", err)
	}
	if len(raw.Signals) == 0 {
		return nil, fail("signals", "no signals: list the signals the detector reads (known: %s)", strings.Join(obs.Names(), ", "))
	}
	for _, s := range raw.Signals {
		sig, ok := obs.Lookup(s)
		if !ok {
			return nil, fail("signals", "unknown signal %q (known: %s)", s, strings.Join(obs.Names(), ", "))
		}
		r.Signals = append(r.Signals, sig)
	}
	if len(r.Entities) == 0 {
		return nil, fail("entities", "no entities: give patterns such as \"country:*\" or \"asn:5089\"")
	}
	for _, pat := range append(slices.Clone(r.Entities), r.Exclude...) {
		if _, err := path.Match(pat, ""); err != nil || !strings.Contains(pat, ":") {
			return nil, fail("entities", "bad entity pattern %q: want kind:pattern such as \"asn:*\"", pat)
		}
	}
	if r.Severity == "" {
		r.Severity = "warning"
	}
	if !slices.Contains(Severities, r.Severity) {
		return nil, fail("severity", "unknown severity %q (want one of %v)", r.Severity, Severities)
	}
	switch r.Actions {
	case "":
		r.Actions = ActionsOff
	case ActionsOff, ActionsDryRun, ActionsEnforce:
	default:
		return nil, fail("actions", "unknown actions mode %q (want off, dry-run or enforce)", r.Actions)
	}
	if raw.Params.Kind != 0 {
		if raw.Params.Kind != yaml.MappingNode {
			return nil, fail("params", "params must be a mapping")
		}
		if err := checkKeys(file, &raw.Params, reflect.TypeOf(p).Elem(), "params of "+r.Detector); err != nil {
			return nil, err
		}
		// Decode key by key so that an error names its own line even when
		// the YAML library does not (text unmarshalers such as durations).
		for i := 0; i+1 < len(raw.Params.Content); i += 2 {
			k := raw.Params.Content[i]
			one := &yaml.Node{Kind: yaml.MappingNode, Content: raw.Params.Content[i : i+2]}
			if err := one.Decode(p); err != nil {
				e := yamlError(file, err).(*Error)
				return nil, &Error{file, k.Line, fmt.Sprintf("rule %q: params.%s: %s", r.Name, k.Value, e.Msg)}
			}
		}
	}
	if err := p.Validate(); err != nil {
		line := at("params")
		if field, _, ok := strings.Cut(err.Error(), ":"); ok {
			if l := keyLine(&raw.Params, strings.TrimSpace(strings.Split(field, ",")[0])); l > 0 {
				line = l
			}
		}
		if line == 0 {
			line = n.Line
		}
		return nil, &Error{file, line, fmt.Sprintf("rule %q: params.%v", r.Name, err)}
	}
	r.Params = p
	return r, nil
}

// checkKeys rejects keys that the target struct does not have: a typo in a
// threshold name must not silently leave the default in force.
func checkKeys(file string, n *yaml.Node, t reflect.Type, what string) error {
	names := yamlerr.Keys(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(names, k.Value) {
			return &Error{file, k.Line, yamlerr.Unknown(k.Value, what, names)}
		}
	}
	return nil
}

func keyLine(n *yaml.Node, key string) int {
	if n == nil {
		return 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return 0
}

// yamlError turns the YAML library's "yaml: line N: msg" into an Error.
func yamlError(file string, err error) error {
	line, msg := yamlerr.Split(err)
	return &Error{file, line, msg}
}
