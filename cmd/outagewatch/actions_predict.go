package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/trafficmanager"
)

func predictCmd() *cobra.Command {
	var asJSON, all bool
	c := &cobra.Command{
		Use:   "predict TOPOLOGY.yaml",
		Short: "Traffic Predictor: for every location, where its traffic would go if it went offline, and whom that would overload",
		Long: `Sweeps every location of a Traffic Manager topology (a scenario file; its
ticks are ignored): with the location's routes withdrawn, its own load
lands by the failover matrix. The first layer is its row alone; the
cascade follows the rows of every neighbour pushed past its capacity, for
as many layers as it takes. Lists the locations whose loss would push a
neighbour above its maximum threshold (--all: every location), with the
neighbours' predicted utilisation, and what the planner could not place
even after shedding pre-emptively. Exits 0; the list is the answer.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := trafficmanager.LoadScenario(args[0])
			if err != nil {
				return err
			}
			start, _ := sc.Inputs()
			preds := trafficmanager.Predict(start)
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				for _, p := range preds {
					if all || p.Overloads() {
						if err := enc.Encode(p); err != nil {
							return err
						}
					}
				}
				return nil
			}
			writePredictions(w, preds, all)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON object per location")
	c.Flags().BoolVar(&all, "all", false, "list every location, not only those whose loss overloads a neighbour")
	return c
}

func writePredictions(w io.Writer, preds []trafficmanager.Prediction, all bool) {
	over := func(os []trafficmanager.Overload) string {
		if len(os) == 0 {
			return "none"
		}
		var s []string
		for _, o := range os {
			s = append(s, fmt.Sprintf("%s %.1f%% (max %.0f%%)", o.Location, 100*o.Util, 100*o.Max))
		}
		return strings.Join(s, ", ")
	}
	n := 0
	for _, p := range preds {
		if !all && !p.Overloads() {
			continue
		}
		n++
		fmt.Fprintf(w, "%s offline:\n  first layer: %s\n", p.Location, over(p.First))
		if len(p.Fails) > 0 {
			fmt.Fprintf(w, "  cascade: %s past capacity, then %s\n", strings.Join(p.Fails, ", "), over(p.Cascade))
		} else {
			fmt.Fprintf(w, "  cascade: %s\n", over(p.Cascade))
		}
		for _, note := range p.Notes {
			fmt.Fprintf(w, "  after shedding: %s\n", note)
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "no location's loss overloads a neighbour")
	}
}
