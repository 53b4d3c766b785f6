package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/score"
)

func scoreCmd() *cobra.Command {
	var o replayOpts
	var asJSON bool
	var labels, rulesB string
	c := &cobra.Command{
		Use:          "score [--json] [--rules F] [FIXTURE...] | score --labels L.yaml [-c CONFIG] [--rules A] [--rules-b B] [FILE...]",
		SilenceUsage: true,
		Short:        "Replay fixtures, or your own recordings with a labels file, and judge the alerts; exits non-zero on a miss or a false alert",
		Long: `Score replays each fixture through its own pipeline and compares the alerts
with the fixture's labels: what was detected and how late, what was missed,
what did not resolve, and every false alert. With no argument it scores
every fixture bundled in the binary.

With --labels, score replays recorded files and exports (outagewatch record,
MRT, dnstap, Atlas, CSV/JSONL observations; the FILE arguments, or the
labels file's inputs:) as one incident and judges the alerts against the
labels file (expect: and allow:, as in a fixture). --rules-b scores a second
rule set on the same data and prints how the two differ. With -c, the
recordings are judged as the live service of that config judges them
(see replay --help).

Exit status 2 when anything scored fails.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var results []score.Result
			var diff *score.Diff
			var err error
			if labels != "" {
				results, diff, err = scoreLabels(labels, args, o, rulesB)
			} else {
				if rulesB != "" {
					return fmt.Errorf("--rules-b compares rule sets on labelled recordings: give --labels")
				}
				results, err = scoreFixtures(args, o)
			}
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range results {
				if !r.Pass {
					failed++
				}
			}
			if err := printScores(cmd.OutOrStdout(), asJSON, results, diff); err != nil {
				return err
			}
			if failed > 0 {
				return &exitError{code: 2, msg: fmt.Sprintf("%d of %d scored failed", failed, len(results))}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print results as JSON")
	c.Flags().StringVar(&o.rules, "rules", "", "rules file or directory (default: each fixture's, else the shipped rules)")
	c.Flags().StringVar(&labels, "labels", "", "labels file: score recorded files or exports against its expect: and allow:")
	c.Flags().StringVar(&rulesB, "rules-b", "", "with --labels: a second rules file or directory to score and compare with --rules")
	configFlag(c, &o)
	c.Flags().StringVar(&o.mapFile, "map", "", "mapping file for recorded inputs: AS → country and name, prefix → origin AS and region")
	c.Flags().UintSliceVar(&o.localASNs, "local-asn", nil, "your own AS numbers, for recorded flows (repeat or comma-separate)")
	return c
}

func scoreFixtures(args []string, o replayOpts) ([]score.Result, error) {
	if len(args) == 0 {
		for _, n := range fixtures.Names() {
			args = append(args, "fixtures/"+n)
		}
	}
	var results []score.Result
	for _, f := range args {
		if _, err := os.Stat(f); err == nil && !replay.IsFixture(f) {
			return nil, fmt.Errorf("%s: not a fixture (a .yaml spec): score a recording or an export against a labels file (score --labels L.yaml %s), or a labelled IODA export or Atlas trace as it comes (scoreboard %s)", f, f, f)
		}
		spec, err := loadFixture(f)
		if err != nil {
			return nil, err
		}
		o.label = spec.Name
		r, err := replayAndScore([]string{f}, o, func(evs []alerting.Event) score.Result { return score.Score(spec, evs) })
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// scoreLabels scores the inputs against a labels file with the rules of o
// and, when rulesB is set, with those too, and diffs the two.
func scoreLabels(file string, args []string, o replayOpts, rulesB string) ([]score.Result, *score.Diff, error) {
	l, err := score.LoadLabels(file)
	if err != nil {
		return nil, nil, err
	}
	inputs := args
	if len(inputs) == 0 {
		inputs = l.InputPaths()
	}
	if len(inputs) == 0 {
		return nil, nil, fmt.Errorf("%s: no inputs: give files to score or list them under inputs:", file)
	}
	sets := []string{o.rules}
	if rulesB != "" {
		sets = append(sets, rulesB)
	}
	var results []score.Result
	var events [][]alerting.Event
	for _, rs := range sets {
		o.rules, o.label = rs, l.Name
		var evs []alerting.Event
		r, err := replayAndScore(inputs, o, func(all []alerting.Event) score.Result {
			evs = all
			return score.Score(l.Spec(), all)
		})
		if err != nil {
			return nil, nil, err
		}
		if rulesB != "" {
			r.Rules = ruleSetName(rs)
		}
		results = append(results, r)
		events = append(events, evs)
	}
	if rulesB == "" {
		return results, nil, nil
	}
	d := score.Compare(ruleSetName(sets[0]), events[0], ruleSetName(sets[1]), events[1])
	return results, &d, nil
}

func ruleSetName(rules string) string {
	if rules == "" {
		return "shipped"
	}
	return rules
}

// replayAndScore replays inputs through one pipeline and scores its alerts.
func replayAndScore(inputs []string, o replayOpts, judge func([]alerting.Event) score.Result) (score.Result, error) {
	var events []alerting.Event
	var files []replay.FileSummary
	o.inputs = &files
	p, err := runReplay(inputs, o, func(ev *alerting.Event) { events = append(events, *ev) })
	if err != nil {
		return score.Result{}, err
	}
	st := p.Stats()
	r := judge(events)
	r.Stats = map[string]any{"records": st.Records, "decode_errors": st.DecodeErrors,
		"series": st.Series, "buckets_closed": st.BucketsClosed}
	if len(files) > 0 {
		r.Stats["inputs"] = files
	}
	slog.Info("scored", "fixture", r.Fixture, "pass", r.Pass, "detected", len(r.Detected), "missed", len(r.Missed),
		"false", len(r.False))
	return r, nil
}

func printScores(w io.Writer, asJSON bool, results []score.Result, diff *score.Diff) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if diff == nil {
			return enc.Encode(results)
		}
		return enc.Encode(struct {
			Results []score.Result `json:"results"`
			Diff    *score.Diff    `json:"diff"`
		}{results, diff})
	}
	score.Print(w, results)
	if diff != nil {
		score.PrintDiff(w, *diff)
	}
	return nil
}
