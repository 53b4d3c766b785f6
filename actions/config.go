// Package actions carries out what an alert calls for: today, shutting the
// BGP sessions with a transit provider at the sites where it drops packets,
// and bringing them back once the loss has stayed resolved. It drives a gobgp
// speaker (gobgpd over gRPC, or one embedded in the process) and sits behind
// guardrails, because a wrong shutdown takes a site's connectivity with it:
// dry-run unless told otherwise, never the last transit at a site, a limit
// per site, a cool-down, and a manual override that wins. Every action is
// written to an audit log before it is carried out and can be undone.
package actions

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/internal/yamlerr"
)

// Modes, as in the rules' actions key.
const (
	ModeOff     = "off"
	ModeDryRun  = "dry-run"
	ModeEnforce = "enforce"
)

// Config is the transit-shutdown configuration: which BGP sessions are
// which transit at which site, and the guardrails.
type Config struct {
	// Mode is off, dry-run (the default) or enforce.
	Mode string
	// Rules names the alert rules that may trigger a shutdown; empty
	// means any packet_loss alert on a transit:ASN entity.
	Rules []string
	// MaxDownPerSite caps the transits shut at one site. Default 1.
	MaxDownPerSite int
	// Cooldown is the least time between two actions on one transit at
	// one site, so a flapping alert cannot flap the sessions. Default 30m.
	Cooldown time.Duration
	// Hold is how long the loss must have stayed resolved before the
	// sessions come back by themselves. Zero means only by hand.
	Hold time.Duration
	// GoBGP is the default gobgpd gRPC address; a site may name its own.
	GoBGP string
	// Audit is the audit log path (JSON lines).
	Audit string
	// RulesFile is a rules file or directory whose actions settings cap
	// the mode (see Transits.RuleModes); empty leaves the mode uncapped.
	RulesFile string
	Sites     map[string]*Site
	// Serve, Kafka and TrafficManager configure `actions serve`.
	Serve          Serve
	Kafka          Kafka
	TrafficManager TrafficManager
	// Sinks receive every action as an alert event, through a persisted
	// outbox per sink under Outbox (default: actions-outbox beside the
	// audit log).
	Sinks  []Sink
	Outbox string
	File   string
}

// Site is one point of presence and its transits.
type Site struct {
	Name     string
	GoBGP    string
	Transits []*Transit
	// Line is where the site is listed, for errors about it.
	Line int
}

// Transit is one provider at one site and our BGP sessions with it, by the
// neighbour address our speaker knows them by.
type Transit struct {
	ASN      uint32
	Name     string
	Sessions []string
}

// Error is a configuration error at file:line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// LoadConfig reads and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("actions config: %w", err)
	}
	return ParseConfig(path, b)
}

// ParseConfig validates a configuration document. Unknown keys, bad
// addresses, a transit listed twice at a site, or a session shared by two
// transits fail with file:line: reason.
func ParseConfig(file string, b []byte) (*Config, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlError(file, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{file, 1, "want a mapping with mode, sites, ..."}
	}
	c := &Config{Mode: ModeDryRun, MaxDownPerSite: 1, Cooldown: 30 * time.Minute, Sites: map[string]*Site{}, File: file}
	top := doc.Content[0]
	fail := func(n *yaml.Node, format string, args ...any) error {
		return &Error{file, n.Line, fmt.Sprintf(format, args...)}
	}
	var sites *yaml.Node
	nodes := map[string]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if _, dup := nodes[k.Value]; dup {
			return nil, fail(k, "key %q given twice", k.Value)
		}
		nodes[k.Value] = v
		switch k.Value {
		case "mode":
			if !slices.Contains([]string{ModeOff, ModeDryRun, ModeEnforce}, v.Value) {
				return nil, fail(v, "mode %q: want off, dry-run or enforce", v.Value)
			}
			c.Mode = v.Value
		case "rules":
			if err := v.Decode(&c.Rules); err != nil {
				return nil, fail(v, "rules: want a list of rule names")
			}
		case "max_down_per_site":
			n, err := strconv.Atoi(v.Value)
			if err != nil || n < 1 {
				return nil, fail(v, "max_down_per_site %q: want a whole number >= 1", v.Value)
			}
			c.MaxDownPerSite = n
		case "cooldown", "hold":
			d, err := time.ParseDuration(v.Value)
			if err != nil || d < 0 {
				return nil, fail(v, "%s %q: want a duration such as 30m", k.Value, v.Value)
			}
			if k.Value == "cooldown" {
				c.Cooldown = d
			} else {
				c.Hold = d
			}
		case "gobgp":
			c.GoBGP = v.Value
		case "audit":
			c.Audit = v.Value
		case "rules_file":
			c.RulesFile = v.Value
		case "outbox":
			c.Outbox = v.Value
		case "sites":
			sites = v
		case "serve":
			if err := decodeStrict(file, "serve", v, &c.Serve); err != nil {
				return nil, err
			}
		case "kafka":
			if err := decodeStrict(file, "kafka", v, &c.Kafka); err != nil {
				return nil, err
			}
		case "traffic_manager":
			if err := decodeStrict(file, "traffic_manager", v, &c.TrafficManager); err != nil {
				return nil, err
			}
		case "sinks":
			if v.Kind != yaml.SequenceNode {
				return nil, fail(v, "sinks: want a list of {name, type, ...}")
			}
			if err := decodeStrict(file, "sinks", v, &c.Sinks); err != nil {
				return nil, err
			}
		default:
			return nil, fail(k, "%s", yamlerr.Unknown(k.Value, "", []string{"mode", "rules", "max_down_per_site", "cooldown", "hold", "gobgp", "audit",
				"rules_file", "sites", "serve", "kafka", "traffic_manager", "sinks", "outbox"}))
		}
	}
	c.Audit = c.resolve(c.Audit)
	if sites == nil || sites.Kind != yaml.MappingNode || len(sites.Content) == 0 {
		at := top
		if sites != nil {
			at = sites
		}
		return nil, fail(at, "sites: want a mapping of site name to its transits")
	}
	owner := map[string]string{}
	for i := 0; i+1 < len(sites.Content); i += 2 {
		k, v := sites.Content[i], sites.Content[i+1]
		if k.Value == "" {
			return nil, fail(k, "empty site name")
		}
		if _, dup := c.Sites[k.Value]; dup {
			return nil, fail(k, "site %q listed twice", k.Value)
		}
		s, err := parseSite(file, k.Value, v, owner)
		if err != nil {
			return nil, err
		}
		if s.GoBGP == "" {
			s.GoBGP = c.GoBGP
		}
		s.Line = k.Line
		c.Sites[k.Value] = s
	}
	if err := c.finishServe(nodes, top); err != nil {
		return nil, err
	}
	return c, nil
}

func parseSite(file, name string, n *yaml.Node, owner map[string]string) (*Site, error) {
	fail := func(n *yaml.Node, format string, args ...any) error {
		return &Error{file, n.Line, fmt.Sprintf("site %s: ", name) + fmt.Sprintf(format, args...)}
	}
	if n.Kind != yaml.MappingNode {
		return nil, fail(n, "want a mapping with transits")
	}
	s := &Site{Name: name}
	var list *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "gobgp":
			s.GoBGP = v.Value
		case "transits":
			list = v
		default:
			return nil, fail(k, "%s", yamlerr.Unknown(k.Value, "", []string{"gobgp", "transits"}))
		}
	}
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		at := n
		if list != nil {
			at = list
		}
		return nil, fail(at, "transits: want a list of {asn, name, sessions}")
	}
	for _, tn := range list.Content {
		if tn.Kind != yaml.MappingNode {
			return nil, fail(tn, "each transit must be a mapping {asn, name, sessions}")
		}
		t := &Transit{}
		var sessNode *yaml.Node
		for i := 0; i+1 < len(tn.Content); i += 2 {
			k, v := tn.Content[i], tn.Content[i+1]
			switch k.Value {
			case "asn":
				a, err := strconv.ParseUint(strings.TrimPrefix(strings.ToUpper(v.Value), "AS"), 10, 32)
				if err != nil || a == 0 {
					return nil, fail(v, "asn %q: want a number such as 1299", v.Value)
				}
				t.ASN = uint32(a)
			case "name":
				t.Name = v.Value
			case "sessions":
				sessNode = v
				if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
					return nil, fail(v, "sessions: want a list of neighbour addresses")
				}
				for _, a := range v.Content {
					addr, err := netip.ParseAddr(a.Value)
					if err != nil {
						return nil, fail(a, "session %q: not an IP address", a.Value)
					}
					key := addr.String()
					if o, dup := owner[key]; dup {
						return nil, fail(a, "session %s already belongs to %s", key, o)
					}
					owner[key] = fmt.Sprintf("%s AS%d", name, t.ASN)
					t.Sessions = append(t.Sessions, key)
				}
			default:
				return nil, fail(k, "%s", yamlerr.Unknown(k.Value, "", []string{"asn", "name", "sessions"}))
			}
		}
		if t.ASN == 0 {
			return nil, fail(tn, "transit without asn")
		}
		if sessNode == nil {
			return nil, fail(tn, "AS%d: no sessions", t.ASN)
		}
		for _, o := range s.Transits {
			if o.ASN == t.ASN {
				return nil, fail(tn, "AS%d listed twice", t.ASN)
			}
		}
		s.Transits = append(s.Transits, t)
	}
	return s, nil
}

func yamlError(file string, err error) error {
	line, msg := yamlerr.Split(err)
	return &Error{file, max(line, 1), msg}
}

// transit returns the transit asn at site, or nil.
func (c *Config) transit(site string, asn uint32) *Transit {
	s := c.Sites[site]
	if s == nil {
		return nil
	}
	for _, t := range s.Transits {
		if t.ASN == asn {
			return t
		}
	}
	return nil
}

// SiteNames lists the configured sites in name order.
func (c *Config) SiteNames() []string {
	ns := make([]string, 0, len(c.Sites))
	for n := range c.Sites {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// CheckDeploy says what a configuration lacks to run as written, beyond
// what parsing checks: in enforce mode every site needs a gobgpd address
// to shut its sessions through (a process that embeds its own speakers,
// as the tests do, passes them in instead). file names the configuration
// in errors.
func (c *Config) CheckDeploy(file string) error {
	if c.Mode != ModeEnforce {
		return nil
	}
	names := make([]string, 0, len(c.Sites))
	for n := range c.Sites {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if s := c.Sites[n]; s.GoBGP == "" {
			return &Error{file, s.Line, fmt.Sprintf("site %q: enforce mode shuts sessions through gobgpd: give the site (or the file) a gobgp: address", n)}
		}
	}
	return nil
}
