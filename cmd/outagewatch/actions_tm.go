package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/ingest/linefile"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/planhook"
	"github.com/outagewatch/outagewatch/tmfeed"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

func planCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "plan SCENARIO.yaml",
		Short: "Dry-run the Traffic Manager on a scenario: each tick's plan changes; exit 2 if a tick's expectations differ",
		Long: `Plays a Traffic Manager scenario (a topology, then ticks that change
capacities and loads; see trafficmanager/testdata/sections-and-loss.yaml)
through the planner and prints, per tick, the changes an actuator would
apply: moves (plan, fraction, from, to), reverts, anycast withdrawals and
announcements, and the notes (load that found no destination, learnt
thresholds not used or reconciled with the target, stale units, cascades
through withdrawn locations, paced steps waiting, withdrawals held back by
the limit). Nothing is sent anywhere.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := trafficmanager.LoadScenario(args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			enc := json.NewEncoder(w)
			var bad []string
			sc.Run(func(i int, tk *trafficmanager.ScenarioTick, r trafficmanager.Result) {
				if d := tk.Mismatch(r); d != "" {
					bad = append(bad, fmt.Sprintf("%s:%d: tick %d (%s):\n%s", sc.File, tk.Line, i, tk.Name, d))
				}
				if asJSON {
					_ = enc.Encode(map[string]any{"tick": i, "name": tk.Name, "changes": r.Changes, "plan": r.State, "notes": r.Notes, "util": r.Util})
					return
				}
				fmt.Fprintf(w, "tick %d: %s\n", i, tk.Name)
				for _, c := range r.Changes {
					fmt.Fprintf(w, "  %s\n", c)
				}
				for _, n := range r.Notes {
					fmt.Fprintf(w, "  note: %s\n", n)
				}
			})
			if len(bad) > 0 {
				return &exitError{2, "plan differs from the scenario's expectations:\n" + strings.Join(bad, "")}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON object per tick")
	return c
}

func tmCmd() *cobra.Command {
	var topology, mode, webhookURL, secretEnv, kafkaTopic string
	var brokers []string
	var learn bool
	var width time.Duration
	c := &cobra.Command{
		Use:   "tm --topology T.yaml [--learn] [--mode M] REPORTS.jsonl[.gz]",
		Short: "Run the Traffic Manager on recorded data-center load reports (dcload JSON lines); prints each tick's changes",
		Long: `Reads dcload reports (one JSON object a line: time, dc, cpu_util,
cpu_ms_per_s, plans, sli_p95_ms, edge_error_share), groups them into tick
windows, and runs the planner on the topology's data centers (a scenario
file: units, thresholds, latency, failover, max_withdrawn, max_report_age,
pace, errors, learn_failover_after; its ticks are ignored). A section s1
of IAD reports as dc "IAD.s1". Capacity is cpu_ms_per_s / cpu_util when
both are given, plans give each unit's load, cpu_ms_per_s is the measured
load paced steps wait on; what a report leaves out keeps its last value,
and a unit silent for longer than max_report_age is stale. With --learn each unit's maximum threshold is learnt from its
reports' SLI against CPU. In enforce mode the changes go to --webhook and
--kafka-topic; in dry-run (the default) they are only printed. Malformed
lines are counted, reported and skipped.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if topology == "" {
				return errors.New("--topology is required")
			}
			sc, err := trafficmanager.LoadScenario(topology)
			if err != nil {
				return err
			}
			feed := tmfeed.New(sc)
			feed.Width = width
			if learn {
				feed.Learn = &trafficmanager.LearnConfig{}
			}
			d := tmDriver(sc, mode, nil)
			if mode == actions.ModeEnforce {
				if webhookURL != "" {
					wh, err := planhook.NewWebhook(webhookURL, os.Getenv(secretEnv))
					if err != nil {
						return err
					}
					d.Publishers = append(d.Publishers, wh)
				}
				if kafkaTopic != "" {
					tp := kafkaio.Transport(nil)
					kp, err := planhook.NewKafka(brokers, kafkaTopic, tp)
					if err != nil {
						return err
					}
					defer tp.CloseIdleConnections()
					defer kp.Close()
					d.Publishers = append(d.Publishers, kp)
				}
				if len(d.Publishers) == 0 {
					return errors.New("enforce mode: give --webhook or --kafka-topic")
				}
			} else if mode != actions.ModeDryRun {
				return fmt.Errorf("mode %q: want dry-run or enforce", mode)
			}
			w := cmd.OutOrStdout()
			ctx := cmd.Context()
			run := func(tk *tmfeed.Tick) error {
				m, err := d.Tick(ctx, tk.At, tk.Input)
				if err != nil {
					return err
				}
				if m == nil {
					return nil
				}
				fmt.Fprintf(w, "%s plan %d (%s)\n", tk.At.Format(time.RFC3339), m.Seq, m.Mode)
				for _, c := range m.Changes {
					fmt.Fprintf(w, "  %s\n", c)
				}
				for _, n := range m.Notes {
					fmt.Fprintf(w, "  note: %s\n", n)
				}
				return nil
			}
			dec := dcload.NewDecoder()
			bad := 0
			_, err = linefile.ReadFile("actions tm", args[0], strings.HasSuffix(args[0], ".gz"), func(r io.Reader) (struct{}, error) {
				return struct{}{}, linefile.Scan(r, 1<<20, func(n int64, line []byte) error {
					if len(line) == 0 {
						return nil
					}
					l, err := dec.Parse(line)
					if err == nil {
						var tk *tmfeed.Tick
						if tk, err = feed.Add(l); err == nil && tk != nil {
							return run(tk)
						}
					}
					if err != nil {
						bad++
						fmt.Fprintf(cmd.ErrOrStderr(), "%s:%d: %v (skipped)\n", args[0], n, err)
					}
					return nil
				})
			})
			if err != nil {
				return err
			}
			if tk := feed.Flush(); tk != nil {
				if err := run(tk); err != nil {
					return err
				}
			}
			if learn {
				for id, l := range feed.Learnt() {
					fmt.Fprintf(w, "learnt %s: %s\n", id, l)
				}
			}
			if bad > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d lines skipped\n", bad)
			}
			return nil
		},
	}
	c.Flags().StringVar(&topology, "topology", "", "scenario file with the data centers, thresholds, latencies and failover matrix")
	c.Flags().StringVar(&mode, "mode", actions.ModeDryRun, "dry-run or enforce")
	c.Flags().BoolVar(&learn, "learn", false, "learn maximum thresholds from the reports' SLI against CPU")
	c.Flags().DurationVar(&width, "tick", 5*time.Minute, "tick window")
	c.Flags().StringVar(&webhookURL, "webhook", "", "POST plan changes here (enforce)")
	c.Flags().StringVar(&secretEnv, "webhook-secret-env", "OUTAGEWATCH_WEBHOOK_SECRET", "environment variable holding the webhook signing secret")
	c.Flags().StringSliceVar(&brokers, "brokers", []string{"localhost:9092"}, "Kafka brokers")
	deprecatedAlias(c.Flags(), "brokers", "kafka-brokers")
	c.Flags().StringVar(&kafkaTopic, "kafka-topic", "", "write plan changes to this topic (enforce)")
	return c
}

// tmDriver is the plan driver for a topology: its failover rows are
// learnt from observed withdrawals once the topology's
// learn_failover_after is reached.
func tmDriver(sc *trafficmanager.Scenario, mode string, m *planhook.Metrics) *planhook.Driver {
	d := &planhook.Driver{Mode: mode, Metrics: m}
	if sc.LearnFailoverAfter > 0 {
		d.Predictor = &trafficmanager.Predictor{After: sc.LearnFailoverAfter}
	}
	return d
}

// anycastFromFlags reads --tm-anycast values, LOCATION=PREFIX[,PREFIX]@NEXTHOP,
// into an anycast publisher on the gobgpd at addr.
func anycastFromFlags(vals []string, addr string) (*planhook.Anycast, func(), error) {
	if addr == "" {
		return nil, nil, errors.New("--tm-anycast: the actions configuration names no gobgp address")
	}
	g, err := actions.DialGoBGP(addr)
	if err != nil {
		return nil, nil, err
	}
	a := &planhook.Anycast{Sites: map[string]planhook.AnycastSite{}}
	for _, v := range vals {
		loc, rest, ok1 := strings.Cut(v, "=")
		list, nh, ok2 := strings.Cut(rest, "@")
		hop, err := netip.ParseAddr(nh)
		if !ok1 || !ok2 || loc == "" || err != nil {
			g.Close()
			return nil, nil, fmt.Errorf("--tm-anycast %q: want LOCATION=PREFIX[,PREFIX]@NEXTHOP", v)
		}
		site := planhook.AnycastSite{Router: g, NextHop: hop}
		for _, p := range strings.Split(list, ",") {
			pfx, err := netip.ParsePrefix(p)
			if err != nil {
				g.Close()
				return nil, nil, fmt.Errorf("--tm-anycast %q: %w", v, err)
			}
			site.Prefixes = append(site.Prefixes, pfx)
		}
		a.Sites[loc] = site
	}
	return a, func() { g.Close() }, nil
}
