package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/score"
)

func scoreboardCmd() *cobra.Command {
	var data, rulesOverride, every, sampleEvery string
	var noiseSpecs []string
	var seeds int
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:          "scoreboard [--data DIR] [--json] [-v] [SET.yaml | LABELLED-FILE ...]",
		SilenceUsage: true,
		Short:        "Score the shipped rules on every real labelled set: windows, detected, alerts, false alerts, pages, false pages, delay",
		Long: `Scoreboard replays real labelled data (IODA's outage signals with IODA's
labels, RIPE Atlas RTT traces with hand-labelled change points) through the
rules each set names, as a user's file would be replayed, and prints one row
a set. With no SET it scores every set under scoreboard/ in the working
directory. --data is the directory the sets' files are relative to.

A labelled file given in place of a set is scored as it comes: an IODA
export (a timestamp and a LABEL column, named as IODA names them,
ioda_country_IQ_iraq.csv.gz) through the shipped IODA rules
(examples/ioda/ioda.yaml, from the repository root, or --rules), its
windows read from its LABEL column, a row of its own; RIPE Atlas RTT
traces (epoch;rtt;cp, named for their probe) through the shipped rules,
all of them one row.

Scoring (README, "Scoreboard"): a window is detected when an alert starts
between 15 minutes before it and its end; an alert is false when it starts
more than 15 minutes outside every window; pages (outage events) are scored
the same way. Atlas traces are scored by their labelled upward level shifts.

--every D keeps one row of each IODA export every D (--every 1h, or
1h@30m for the rows at half past): the same outages at a coarser step, as
an export of a longer range or another observatory's gives them. A method
chosen on principle holds there too. --sample-every D keeps the first
sample of each Atlas trace in every D (--sample-every 16m: a probe
measured every 16 minutes), a change point on a sample left out moving
to the next one kept.

--noise COLUMN=lognormal:SIGMA multiplies each value of that column of
an IODA export by log-normal noise of SIGMA (on the log scale), and
--noise COLUMN=poisson draws each value anew as a Poisson count of that
mean: a noisier region's, or a sampled count's, view of the same
outages. A value repeated on consecutive rows keeps its draw, as an
export holds a value on the rows of its round (a column that stays
constant moves as one). For Atlas traces the column is rtt: each RTT
multiplied by log-normal noise, a jitterier path's view of the same
shifts (scored against the labelled traces as they are), or with
rtt=late:SIGMA by e to the SIGMA·|z|, only ever later: a path whose
samples queue, as a real path's do (nothing makes a packet faster than
its path). --seeds N
scores each set N times, seeds 1 to N, and adds the rows up: the
outages a method finds, and the false alerts it adds, when the series
it meets is noisier than the one it was written beside.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			grid, err := parseEvery("--every", every)
			if err != nil {
				return err
			}
			samples, err := parseEvery("--sample-every", sampleEvery)
			if err != nil {
				return err
			}
			noise, err := parseNoise(noiseSpecs)
			if err != nil {
				return err
			}
			if seeds < 1 || (seeds > 1 && len(noise) == 0) {
				return fmt.Errorf("--seeds %d: want 1, or more with --noise", seeds)
			}
			if len(args) == 0 {
				m, _ := filepath.Glob("scoreboard/*.yaml")
				if len(m) == 0 {
					return fmt.Errorf("no sets: give set files, or run from the repository root (scoreboard/*.yaml)")
				}
				args = m
			}
			sets, err := loadSets(args)
			if err != nil {
				return err
			}
			var rows []score.Row
			for _, s := range sets {
				if rulesOverride != "" {
					s.Rules, err = filepath.Abs(rulesOverride)
					if err != nil {
						return err
					}
				}
				row := score.Row{Set: s.Name}
				for seed := range uint64(seeds) {
					r, err := scoreSet(s, data, grid, samples, noise.seeded(seed+1))
					if err != nil {
						return err
					}
					row.Add(r)
				}
				rows = append(rows, row)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			score.PrintBoard(cmd.OutOrStdout(), rows, verbose)
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", "testdata", "directory the sets' files are relative to")
	c.Flags().StringVar(&rulesOverride, "rules", "", "score these rules on every set instead of each set's own")
	c.Flags().BoolVar(&asJSON, "json", false, "print the rows as JSON")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list each missed window and false alert")
	c.Flags().StringVar(&every, "every", "", "keep one row of each IODA export every `D[@OFFSET]` (1h, 1h@30m)")
	c.Flags().StringVar(&sampleEvery, "sample-every", "", "keep the first sample of each Atlas trace in every `D` (16m)")
	c.Flags().StringArrayVar(&noiseSpecs, "noise", nil, "add noise to a column of each IODA export: `COLUMN=lognormal:SIGMA`, COLUMN=late:SIGMA or COLUMN=poisson (repeatable)")
	c.Flags().IntVar(&seeds, "seeds", 1, "with --noise, score each set with seeds 1 to N and add the rows up")
	return c
}

// noiseSpec is the noise --noise adds to the columns of an IODA export
// (or an Atlas trace's rtt), by column.
type noiseSpec map[string]noiseDraw

// noiseDraw is one column's noise: log-normal of Sigma on the log scale,
// only ever upwards where Late (a sample that queued: e to the σ·|z|), or
// for Sigma 0 a Poisson draw.
type noiseDraw struct {
	Sigma float64
	Late  bool
}

const noiseUsage = "want COLUMN=lognormal:SIGMA, COLUMN=late:SIGMA or COLUMN=poisson"

// parseNoise reads --noise: COLUMN=lognormal:SIGMA, COLUMN=late:SIGMA or
// COLUMN=poisson.
func parseNoise(specs []string) (noiseSpec, error) {
	n := noiseSpec{}
	for _, s := range specs {
		col, kind, _ := strings.Cut(s, "=")
		var d noiseDraw
		name, sigma, hasSigma := strings.Cut(kind, ":")
		switch {
		case col == "":
			return nil, fmt.Errorf("--noise %q: %s", s, noiseUsage)
		case kind == "poisson":
		case hasSigma && (name == "lognormal" || name == "late"):
			v, err := strconv.ParseFloat(sigma, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("--noise %q: SIGMA must be a positive number (0.2)", s)
			}
			d = noiseDraw{Sigma: v, Late: name == "late"}
		default:
			return nil, fmt.Errorf("--noise %q: %s", s, noiseUsage)
		}
		if _, dup := n[col]; dup {
			return nil, fmt.Errorf("--noise %q: column %s given twice", s, col)
		}
		n[col] = d
	}
	return n, nil
}

// noiser perturbs an export's values as its noiseSpec says, from one
// seed; nil perturbs nothing.
type noiser struct {
	spec noiseSpec
	rng  *rand.Rand
	// held is each column's last value as read and as drawn: a value
	// held on the rows of its round keeps its draw.
	held map[string][2]float64
}

// seeded returns the noiser of seed, or nil where there is no noise.
func (n noiseSpec) seeded(seed uint64) *noiser {
	if len(n) == 0 {
		return nil
	}
	return &noiser{spec: n, rng: rand.New(rand.NewPCG(seed, 0x6f77)), held: map[string][2]float64{}}
}

// value is v of column c as the noise makes it; a value equal to the
// column's last keeps its draw.
func (n *noiser) value(c string, v float64) float64 {
	return n.noisy(c, v, true)
}

// sample is v of column c as the noise makes it, drawn anew whatever the
// value before: one measurement of many (an RTT), not a value held on
// the rows of its round.
func (n *noiser) sample(c string, v float64) float64 {
	return n.noisy(c, v, false)
}

// noisy is value (hold) and sample (not hold).
func (n *noiser) noisy(c string, v float64, hold bool) float64 {
	if n == nil {
		return v
	}
	d, ok := n.spec[c]
	if !ok {
		return v
	}
	if h, ok := n.held[c]; hold && ok && h[0] == v {
		return h[1]
	}
	out := n.draw(d, v)
	if hold {
		n.held[c] = [2]float64{v, out}
	}
	return out
}

// draw is v with the noise of d.
func (n *noiser) draw(d noiseDraw, v float64) float64 {
	if d.Sigma > 0 {
		z := n.rng.NormFloat64()
		if d.Late {
			z = math.Abs(z)
		}
		return v * math.Exp(d.Sigma*z)
	}
	if v <= 0 {
		return 0
	}
	return distuv.Poisson{Lambda: v, Src: n.rng}.Rand()
}

// rowGrid keeps the rows on a grid: every period, from offset past the
// Unix epoch; the zero grid keeps every row.
type rowGrid struct{ period, offset time.Duration }

func (g rowGrid) keeps(t time.Time) bool {
	return g.period == 0 || (t.Sub(time.Unix(0, 0))-g.offset)%g.period == 0
}

// thin keeps the first sample of a trace in each period (from offset),
// as a probe measured that often would have given; a change point on a
// sample left out moves to the next one kept, so that the labels stay
// with the trace.
func (g rowGrid) thin(ss []score.Sample) []score.Sample {
	if g.period == 0 {
		return ss
	}
	var out []score.Sample
	last, cp := int64(math.MinInt64), false
	for _, s := range ss {
		cp = cp || s.CP
		if k := int64((s.Time.Sub(time.Unix(0, 0)) - g.offset).Truncate(g.period) / g.period); k != last {
			last = k
			s.CP, cp = cp, false
			out = append(out, s)
		}
	}
	return out
}

// parseEvery reads --every (or --sample-every, named flag): a period,
// and after @ an offset under it.
func parseEvery(flag, s string) (rowGrid, error) {
	if s == "" {
		return rowGrid{}, nil
	}
	p, o, _ := strings.Cut(s, "@")
	var g rowGrid
	var err error
	if g.period, err = time.ParseDuration(p); err != nil || g.period <= 0 {
		return g, fmt.Errorf("%s %q: want a positive duration, optionally @ an offset under it (1h, 1h@30m)", flag, s)
	}
	if o != "" {
		if g.offset, err = time.ParseDuration(o); err != nil || g.offset < 0 || g.offset >= g.period {
			return g, fmt.Errorf("%s %q: the offset must be a duration from 0 to under %s", flag, s, g.period)
		}
	}
	return g, nil
}

// iodaRules are the shipped IODA rules (bundled, so found from any
// directory): those a bare IODA export is scored by.
const iodaRules = "examples/ioda/ioda.yaml"

// loadSets reads the sets args name: set files, and labelled files
// scored as they come (see the command's help), each IODA export a set
// of its own and the Atlas traces one set together.
func loadSets(args []string) ([]*score.BoardSet, error) {
	var sets []*score.BoardSet
	var atlas *score.BoardSet
	for _, f := range args {
		if ext := filepath.Ext(f); ext == ".yaml" || ext == ".yml" {
			s, err := score.LoadBoardSet(f)
			if err != nil {
				return nil, err
			}
			sets = append(sets, s)
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		format, err := score.SniffFormat(f)
		if err != nil {
			return nil, err
		}
		switch format {
		case score.FormatIODACSV:
			name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".gz"), ".csv")
			sets = append(sets, &score.BoardSet{Name: name, Rules: iodaRules, Format: format, Files: []string{abs}})
		case score.FormatAtlasRTT:
			if atlas == nil {
				// The shipped rules are the replay's own when it names none.
				atlas = &score.BoardSet{Name: "atlas-rtt", Format: format}
				sets = append(sets, atlas)
			}
			atlas.Files = append(atlas.Files, abs)
		}
	}
	return sets, nil
}

// scoreSet replays one labelled set through its rules and scores it.
func scoreSet(s *score.BoardSet, data string, grid, samples rowGrid, noise *noiser) (score.Row, error) {
	paths, err := s.Paths(data)
	if err != nil {
		return score.Row{}, err
	}
	dir, err := os.MkdirTemp("", "outagewatch-scoreboard-")
	if err != nil {
		return score.Row{}, err
	}
	defer os.RemoveAll(dir)
	o := replayOpts{rules: s.RulesPath(), label: s.Name}
	replayed := func(input string) ([]alerting.Event, error) {
		var evs []alerting.Event
		keep := func(ev *alerting.Event) { evs = append(evs, *ev) }
		o.events = keep
		_, err := runReplay([]string{input}, o, keep)
		return evs, err
	}
	switch s.Format {
	case score.FormatIODACSV:
		row := score.Row{Set: s.Name}
		for i, p := range paths {
			rows, err := score.ReadIODACSV(p)
			if err != nil {
				return score.Row{}, err
			}
			f, err := s.ForIODAFile(p, rows)
			if err != nil {
				return score.Row{}, err
			}
			in := filepath.Join(dir, fmt.Sprintf("ioda-%d.csv", i))
			if err := writeIODAObservations(p, rows, in, f.Entity, f.Columns, grid, noise); err != nil {
				return score.Row{}, err
			}
			evs, err := replayed(in)
			if err != nil {
				return score.Row{}, err
			}
			row.Add(score.ScoreWindows(s.Name, f.Windows, evs))
		}
		return row, nil
	case score.FormatAtlasRTT:
		// Every trace in one Atlas file, as a user's download of a
		// measurement holds every probe; the alerts are then scored probe
		// by probe.
		in := filepath.Join(dir, "traces.atlas.jsonl")
		traces, err := writeAtlasResults(paths, in, samples, noise)
		if err != nil {
			return score.Row{}, err
		}
		evs, err := replayed(in)
		if err != nil {
			return score.Row{}, err
		}
		row := score.Row{Set: s.Name}
		for _, tr := range traces {
			var mine []alerting.Event
			for _, ev := range evs {
				if strings.HasPrefix(ev.Entity, "probe:"+tr.probe+">") {
					mine = append(mine, ev)
				}
			}
			row.Add(score.ScoreShifts(s.Name, tr.samples, mine))
		}
		return row, nil
	}
	return score.Row{}, fmt.Errorf("%s: format %q", s.File, s.Format)
}

// writeIODAObservations writes an IODA CSV's mapped columns, of the rows
// on grid and with noise's noise, as time,entity,signal,value
// observations, as a user would export them.
func writeIODAObservations(src string, rows []score.IODARow, dst, entity string, columns map[string]string, grid rowGrid, noise *noiser) error {
	cols := slices.Sorted(maps.Keys(columns))
	return writeBuffered(dst, func(w *bufio.Writer) error {
		fmt.Fprintln(w, "time,entity,signal,value")
		for _, r := range rows {
			if !grid.keeps(r.Time) {
				continue
			}
			for _, c := range cols {
				v, ok := r.Values[c]
				if !ok {
					return fmt.Errorf("%s: no column %q", src, c)
				}
				if math.IsNaN(v) {
					continue
				}
				v = noise.value(c, v)
				fmt.Fprintf(w, "%s,%s,%s,%s\n", r.Time.Format(time.RFC3339), entity, columns[c], strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
		return nil
	})
}

// writeBuffered creates dst and writes it through a buffer with write.
func writeBuffered(dst string, write func(*bufio.Writer) error) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := errors.Join(write(w), w.Flush()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type atlasTrace struct {
	probe   string
	samples []score.Sample
}

// atlasProbe is the probe id a trace's file name holds: the name itself
// (11119.csv.gz), or its one run of digits (probe-11119.csv).
func atlasProbe(path string) (string, error) {
	runs := digitRuns.FindAllString(filepath.Base(path), -1)
	if len(runs) != 1 || len(runs[0]) > 9 {
		return "", fmt.Errorf("%s: the file's name must hold its probe id, and no other number (11119.csv.gz)", path)
	}
	n, _ := strconv.Atoi(runs[0])
	return strconv.Itoa(n), nil
}

var digitRuns = regexp.MustCompile(`[0-9]+`)

// atlasDestination is the destination the traces are written towards: the
// labelled traces name none, and a documentation address (RFC 5737) says
// plainly that it stands in.
const atlasDestination = "192.0.2.1"

// writeAtlasResults writes labelled RTT traces as RIPE Atlas ping results,
// one result a sample (prb_id from the file name), in time order, with
// noise's noise on column rtt.
func writeAtlasResults(paths []string, dst string, grid rowGrid, noise *noiser) ([]atlasTrace, error) {
	type line struct {
		t   int64
		txt string
	}
	var traces []atlasTrace
	var lines []line
	for _, p := range paths {
		ss, err := score.ReadAtlasRTT(p)
		if err != nil {
			return nil, err
		}
		ss = grid.thin(ss)
		probe, err := atlasProbe(p)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(traces, func(t atlasTrace) bool { return t.probe == probe }); i >= 0 {
			return nil, fmt.Errorf("%s: probe %s again (%s): one trace a probe, or the two would be one series", p, probe, paths[i])
		}
		traces = append(traces, atlasTrace{probe, ss})
		for _, s := range ss {
			res := `[{"x":"*"}]`
			rcvd := 0
			if s.RTT >= 0 {
				res, rcvd = fmt.Sprintf(`[{"rtt":%s}]`, strconv.FormatFloat(noise.sample("rtt", s.RTT), 'f', 3, 64)), 1
			}
			lines = append(lines, line{s.Time.Unix(), fmt.Sprintf(`{"type":"ping","af":4,"prb_id":%s,"timestamp":%d,"dst_addr":"%s","sent":1,"rcvd":%d,"result":%s}`,
				probe, s.Time.Unix(), atlasDestination, rcvd, res)})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return int(a.t - b.t) })
	return traces, writeBuffered(dst, func(w *bufio.Writer) error {
		for _, l := range lines {
			fmt.Fprintln(w, l.txt)
		}
		return nil
	})
}
