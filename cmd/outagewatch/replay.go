package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/report"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/scenario"
	"github.com/outagewatch/outagewatch/service"
)

// defaultFixture is what `outagewatch replay` replays with no arguments.
const defaultFixture = "fixtures/" + fixtures.Default

type replayOpts struct {
	// config is a service config: the replay judges as that deployment
	// does (its rules, map, own AS numbers, buckets, correlation and
	// silences), where --rules, --map and --local-asn do not say otherwise.
	config  string
	rules   string
	mapFile string
	out     string
	report  string
	// localASNs are the operator's own networks, for recorded flows.
	localASNs []uint
	// label names the fixture or labelled incident in log lines.
	label string
	// inputs, when set, receives the summary of every input file.
	inputs *[]replay.FileSummary
	serve  string // after the replay, serve the outage page here
	// recorder keeps observed values for the report.
	recorder *recorder.Recorder
	// events receives outage events (replay prints them with the alerts).
	events func(*alerting.Event)
}

func replayCmd() *cobra.Command {
	var o replayOpts
	var text bool
	c := &cobra.Command{
		Use:   "replay [-c CONFIG] [--rules F] [--map F] [--out F] FIXTURE|FILE...",
		Short: "Replay incident fixtures or recorded files through the pipeline; prints one JSON alert event per line",
		Long: `Replay renders fixtures (YAML specs under fixtures/) into real wire formats, reads
recorded files (outagewatch record, observation exports, MRT, dnstap), merges
them by event time and runs them through the same pipeline as the live
service. Alert events go to stdout (or --out) as JSON lines, or with --text
as one line for a person each; progress goes to stderr. With no argument it replays ` + defaultFixture + `. A fixture
not found on disk is taken from the ones bundled in the binary.

With -c, a recording (outagewatch record) is judged as the live service of
that config judges: its rules, mapping file, own AS numbers, bucket width,
lateness, history and correlation settings, and its silences (a silence
matches by event time; those set through the API are not read).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{defaultFixture}
			}
			w := cmd.OutOrStdout()
			if o.out != "" && o.out != "-" {
				f, err := os.Create(o.out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			// A bad --serve address fails now, not after the replay.
			var ln net.Listener
			if o.serve != "" {
				var err error
				if ln, err = net.Listen("tcp", o.serve); err != nil {
					return fmt.Errorf("--serve %s: %w", o.serve, err)
				}
				defer ln.Close()
			}
			bw := bufio.NewWriter(w)
			defer bw.Flush()
			var sink alerting.Sink = alerting.NewJSONL("replay", bw)
			if text {
				sink = textSink{bw}
			}
			var events, outages []alerting.Event
			if o.report != "" || o.serve != "" {
				o.recorder = recorder.New()
			}
			o.events = func(ev *alerting.Event) {
				_ = sink.Send(context.Background(), ev)
				if o.report != "" || o.serve != "" {
					outages = append(outages, *ev)
				}
			}
			p, err := runReplay(args, o, func(ev *alerting.Event) {
				if err := sink.Send(context.Background(), ev); err != nil {
					slog.Error("write alert", "err", err)
				}
				if o.report != "" || o.serve != "" {
					events = append(events, *ev)
				}
			})
			if err != nil {
				return err
			}
			if o.report != "" {
				// The outage events first, as the review reads them.
				if err := writeReport(o.report, strings.Join(args, ", "), append(outages, events...), o.recorder, fixtureWindows(args)); err != nil {
					return err
				}
			}
			if o.serve != "" {
				bw.Flush()
				return serveStatus(cmd.Context(), ln, strings.Join(args, ", "), append(events, outages...), o.recorder,
					service.ReplayMetrics(p))
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.rules, "rules", "", "rules file or directory of them (default: the fixture's, else the shipped rules)")
	c.Flags().StringVar(&o.mapFile, "map", "", "mapping file: AS → country and name, prefix → origin AS and region")
	configFlag(c, &o)
	c.Flags().StringVarP(&o.out, "out", "o", "", "write alert events here instead of stdout")
	c.Flags().StringVar(&o.report, "report", "", "also write an HTML report: the alerts and a chart of every alerted series")
	c.Flags().UintSliceVar(&o.localASNs, "local-asn", nil, "your own AS numbers, for recorded flows (repeat or comma-separate)")
	c.Flags().StringVar(&o.serve, "serve", "", "after the replay, serve the outage page and /metrics on this address (e.g. 127.0.0.1:9311) until interrupted")
	c.Flags().BoolVar(&text, "text", false, "one line for a person per alert and event instead of JSON")
	return c
}

// configFlag adds -c: judge as the live service of that config does.
func configFlag(c *cobra.Command, o *replayOpts) {
	c.Flags().StringVarP(&o.config, "config", "c", "", "a service config: judge with its rules, mapping file, own AS numbers, buckets, correlation and silences (flags given win)")
}

// textSink writes each notification as a line for a person.
type textSink struct{ w io.Writer }

func (textSink) Name() string { return "replay-text" }

func (t textSink) Send(_ context.Context, ev *alerting.Event) error {
	_, err := fmt.Fprintln(t.w, alerting.TextLine(ev))
	return err
}

// checkInput fails for an input that is neither a file nor a bundled
// fixture, naming the fixtures there are.
func checkInput(in string) error {
	if _, err := os.Stat(in); err == nil {
		return nil
	}
	if replay.IsFixture(in) {
		if _, ok := fixtures.Read(in); ok {
			return nil
		}
	}
	var names []string
	for _, n := range fixtures.Names() {
		names = append(names, strings.TrimSuffix(n, ".yaml"))
	}
	return fmt.Errorf("%s: no such file, nor a bundled fixture (bundled: %s)", in, strings.Join(names, ", "))
}

// writeReport writes the HTML report of a replay.
func writeReport(file, title string, events []alerting.Event, rec *recorder.Recorder, wins []report.Window) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := report.Write(f, title, events, rec, wins...); err != nil {
		f.Close()
		return fmt.Errorf("report %s: %w", file, err)
	}
	return f.Close()
}

// runReplay replays inputs through one pipeline and returns it.
func runReplay(inputs []string, o replayOpts, out func(*alerting.Event)) (*pipeline.Pipeline, error) {
	var srcs []replay.Source
	m := netmap.New()
	var local []uint32
	for _, a := range o.localASNs {
		local = append(local, uint32(a))
	}
	log := slog.Default()
	if o.label != "" {
		log = log.With("fixture", o.label)
	}
	var set *rules.Set
	var err error
	var base pipeline.Config
	if o.config != "" {
		c, err := service.LoadConfig(o.config)
		if err != nil {
			return nil, err
		}
		if base, err = c.Judging(); err != nil {
			return nil, fmt.Errorf("%s: %w", o.config, err)
		}
		m, set = base.Map, base.Rules
		local = append(local, base.LocalASNs...)
	}
	if o.mapFile != "" {
		if m, err = netmap.LoadFile(netmap.New(), o.mapFile); err != nil {
			return nil, err
		}
	}
	if o.rules != "" {
		if set, err = rules.LoadAll(o.rules); err != nil {
			return nil, err
		}
	}
	total := 0
	for _, in := range inputs {
		in = fixtures.Resolve(in) // a bundled fixture by its bare name
		if err := checkInput(in); err != nil {
			return nil, err
		}
		if replay.IsFixture(in) {
			spec, err := loadFixture(in)
			if err != nil {
				return nil, err
			}
			mergeMap(m, spec.Map())
			local = append(local, spec.LocalASNs...)
			if set == nil && spec.Rules != "" {
				if set, err = rules.Load(filepath.Join(filepath.Dir(in), spec.Rules)); err != nil {
					return nil, err
				}
			}
			ss, err := replay.RenderSpec(spec)
			if err != nil {
				return nil, err
			}
			for _, s := range ss {
				total += s.(*replay.SliceSource).Len()
			}
			srcs = append(srcs, ss...)
			continue
		}
		if obsfile.IsIODAFile(in) {
			if err := obsfile.CheckIODASignals(); err != nil {
				return nil, fmt.Errorf("%s: %w", in, err)
			}
		}
		s, err := replay.OpenFile(in)
		if err != nil {
			return nil, err
		}
		if ls, ok := s.(interface{ Len() int }); ok {
			total += ls.Len()
		}
		if fs, ok := s.(*replay.FileSource); ok {
			giveNames(m, fs.Names())
		}
		srcs = append(srcs, s)
	}
	cfg := base
	cfg.Rules, cfg.Map, cfg.LocalASNs, cfg.Logger, cfg.Events = set, m, local, log, o.events
	if o.recorder != nil {
		cfg.Tap = o.recorder.Bucket
	}
	p, err := pipeline.New(cfg, out)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	progress := newProgress(total)
	if err := replay.Run(p, srcs, progress); err != nil {
		return p, err
	}
	p.Finish() // the input is over: the routing table takes its last updates
	sums, ferr := replay.Summaries(srcs)
	if o.inputs != nil {
		*o.inputs = sums
	}
	for i := range sums {
		sum := &sums[i]
		if sum.Faults() > 0 {
			log.Warn("input: "+sum.String(), "file", sum.File)
		} else {
			log.Info("input: "+sum.String(), "file", sum.File)
		}
	}
	if ferr != nil {
		return p, ferr
	}
	st := p.Stats()
	var recs, bad int64
	for _, n := range st.Records {
		recs += n
	}
	for _, n := range st.DecodeErrors {
		bad += n
	}
	for _, rule := range slices.Sorted(maps.Keys(st.Unjudgeable)) {
		l := st.Unjudgeable[rule]
		log.Warn("series the rule cannot judge at its threshold as the replay ends (too small, too noisy, or its threshold out of reach; it may have judged them before)", "rule", rule, "series", len(l),
			"first", l[0])
	}
	el := time.Since(start)
	log.Info("replay done", "records", recs, "decode_errors", bad, "series", st.Series,
		"buckets", st.BucketsClosed, "alerts", st.Events, "elapsed", el.Round(time.Millisecond),
		"records_per_s", int64(float64(recs)/el.Seconds()))
	return p, nil
}

// giveNames adds what an input calls its entities to the names m falls
// back on; the first input to name an entity names it.
func giveNames(m *netmap.Map, names map[string]string) {
	for e, n := range names {
		if m.Given == nil {
			m.Given = map[string]string{}
		}
		if _, ok := m.Given[e]; !ok {
			m.Given[e] = n
		}
	}
}

// loadFixture reads a fixture from disk, or from the bundled ones when no
// such file exists.
func loadFixture(name string) (*scenario.Spec, error) {
	if _, err := os.Stat(name); err != nil {
		if b, ok := fixtures.Read(name); ok {
			return scenario.Parse(name, b)
		}
	}
	return scenario.Load(name)
}

func mergeMap(dst, src *netmap.Map) {
	for k, v := range src.Countries {
		dst.Countries[k] = v
	}
	for k, v := range src.Names {
		dst.Names[k] = v
	}
	src.Origins.Walk(func(p netip.Prefix, v uint32) bool { dst.Origins.Insert(p, v); return true })
	src.Regions.Walk(func(p netip.Prefix, v string) bool { dst.Regions.Insert(p, v); return true })
}

// newProgress draws a bar on a terminal and stays quiet otherwise.
func newProgress(total int) replay.Progress {
	if !term.IsTerminal(int(os.Stderr.Fd())) || total == 0 {
		return nil
	}
	bar := progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription("replay"), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	return func(t int64, n int64) {
		bar.Describe(time.Unix(0, t).UTC().Format("2006-01-02 15:04"))
		_ = bar.Set(int(n))
	}
}
