package service

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/rules"
)

// loadRules loads the rules a config names, or the shipped ones.
func loadRules(cfg *Config) (*rules.Set, error) {
	if cfg.Rules != "" {
		return rules.LoadAll(cfg.resolve(cfg.Rules))
	}
	return rules.Default()
}

// loadMap loads the mapping file a config names, or an empty map.
func loadMap(cfg *Config) (*netmap.Map, error) {
	m := netmap.New()
	if cfg.Map == "" {
		return m, nil
	}
	return netmap.LoadFile(m, cfg.resolve(cfg.Map))
}

// Check loads and checks what a config names beyond itself, as run does
// before it joins Kafka, so that a deployment finds its mistakes before
// it starts: the rules (the shipped ones when none are named), the
// mapping file, the Kafka TLS and SASL files and secrets, each sink's
// secret, and the action rules the sinks name. It neither dials a broker
// nor writes a file. It returns one line a part, for the operator.
func Check(cfg *Config) ([]string, error) {
	var out []string
	var topics []string
	for _, t := range cfg.Kafka.Topics {
		topics = append(topics, fmt.Sprintf("%s (%s, %s)", t.Name, t.Stream, t.Format))
	}
	out = append(out, fmt.Sprintf("kafka: brokers %s; topics %s", strings.Join(cfg.Kafka.Brokers, ", "), strings.Join(topics, ", ")))
	if _, err := cfg.KafkaDialer(); err != nil {
		return out, err
	}
	if _, _, err := net.SplitHostPort(cfg.HTTP.Listen); err != nil {
		return out, fmt.Errorf("http.listen %q: %w", cfg.HTTP.Listen, err)
	}
	line, err := checkDataDir(cfg.DataDir)
	if err != nil {
		return out, err
	}
	out = append(out, line, "http: listen "+cfg.HTTP.Listen)
	// What run and replay -c judge with, loaded as they load it.
	pc, err := cfg.Judging()
	if err != nil {
		return out, err
	}
	set, m := pc.Rules, pc.Map
	out = append(out, fmt.Sprintf("rules: %s: %d rules", set.File, len(set.Rules)))
	if cfg.Map != "" {
		out = append(out, fmt.Sprintf("map: %s: %d AS names, %d AS countries, %d prefix origins, %d prefix regions",
			cfg.resolve(cfg.Map), len(m.Names), len(m.Countries), m.Origins.Len(), m.Regions.Len()))
	} else {
		out = append(out, "map: none (entities are named by their numbers and codes)")
	}
	out = append(out, judgingLine(cfg))
	if err := checkActionRules(cfg, set); err != nil {
		return out, err
	}
	for _, sc := range cfg.Sinks {
		if _, err := sinkSecret(sc); err != nil {
			return out, err
		}
		line := fmt.Sprintf("sink %s: %s", sc.Name, sc.Type)
		if len(sc.ActionRules) > 0 {
			line += ", the actions feed of " + strings.Join(sc.ActionRules, ", ")
		}
		out = append(out, line)
	}
	return out, nil
}

// judgingLine says how the pipeline will judge, the defaults the config
// leaves out filled in: what replay -c judges a recording with too.
func judgingLine(cfg *Config) string {
	dur := func(d time.Duration) string {
		if d%time.Minute != 0 {
			return d.String()
		}
		return alerting.HumanDuration(d)
	}
	width := cmp.Or(cfg.BucketWidth, time.Duration(aggregate.DefaultWidth))
	history := cmp.Or(cfg.History, aggregate.DefaultHistory)
	wait := "group wait " + dur(correlate.DefaultGroupWait)
	switch gw := cfg.Correlation.groupWait(); {
	case gw < 0:
		wait = "no group wait (pages at once)"
	case gw > 0:
		wait = "group wait " + dur(gw)
	}
	return fmt.Sprintf("judging: buckets of %s, lateness %s, history %d buckets (%s), %s, %d silences in the config",
		dur(width), dur(cfg.Lateness), history, dur(time.Duration(history)*width), wait, len(cfg.Silences))
}

// checkDataDir says whether the service could keep its state in dir:
// the directory, or the nearest of its parents that exists for run to
// make it under, must be a directory this user may write to.
func checkDataDir(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			if d == filepath.Dir(d) {
				return "", fmt.Errorf("data_dir %s: %w", dir, err)
			}
			continue
		}
		if !st.IsDir() {
			return "", fmt.Errorf("data_dir %s: %s is not a directory", dir, d)
		}
		if err := writable(d); err != nil {
			return "", fmt.Errorf("data_dir %s: %s is not writable by this user: %w", dir, d, err)
		}
		if d == dir {
			return "data_dir: " + dir + " (writable)", nil
		}
		return fmt.Sprintf("data_dir: %s (run makes it, in %s, writable)", dir, d), nil
	}
}
