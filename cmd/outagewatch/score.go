package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/score"
)

func scoreCmd() *cobra.Command {
	var o replayOpts
	var asJSON bool
	c := &cobra.Command{
		Use:   "score [--json] [--rules F] [FIXTURE...]",
		Short: "Replay each fixture on its own and judge the alerts against its labels; exits non-zero on a miss or a false alert",
		Long: `Score replays each fixture through its own pipeline and compares the alerts
with the fixture's labels: what was detected and how late, what was missed,
what did not resolve, and every false alert. With no argument it scores
every fixture bundled in the binary. Exit status 2 when any fixture fails.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				for _, n := range fixtures.Names() {
					args = append(args, "fixtures/"+n)
				}
			}
			var results []score.Result
			failed := 0
			for _, f := range args {
				spec, err := loadFixture(f)
				if err != nil {
					return err
				}
				var events []alerting.Event
				p, err := runReplay([]string{f}, o, func(ev *alerting.Event) { events = append(events, *ev) })
				if err != nil {
					return err
				}
				st := p.Stats()
				r := score.Score(spec, events)
				r.Stats = map[string]any{"records": st.Records, "decode_errors": st.DecodeErrors,
					"series": st.Series, "buckets_closed": st.BucketsClosed}
				if !r.Pass {
					failed++
				}
				results = append(results, r)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			} else {
				score.Print(cmd.OutOrStdout(), results)
			}
			if failed > 0 {
				return &exitError{code: 2, msg: fmt.Sprintf("%d of %d fixtures failed", failed, len(args))}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print results as JSON")
	c.Flags().StringVar(&o.rules, "rules", "", "rules file (default: each fixture's, else the shipped rules)")
	return c
}
