package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/rules"
)

func init() { extraCommands = append(extraCommands, actionsCmd) }

// defaultActionsConfig is where `actions` looks without -c: the example
// configuration of a clone, relative to the working directory.
const defaultActionsConfig = "deploy/actions.yaml"

// ruleModes loads the rules at path for what each rule's actions setting
// allows (Transits.RuleModes).
func ruleModes(path string) (map[string]string, error) {
	set, err := rules.LoadAll(path)
	if err != nil {
		return nil, err
	}
	return actions.ModesFromRules(set), nil
}

func actionsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "actions",
		Short: "Transit-port shutdown and Traffic Manager plans: dry-runs, audit log, undo",
	}
	var cfgPath, auditPath, who, rulesPath string
	loadCfg := func() (*actions.Config, error) {
		cfg, err := actions.LoadConfig(cfgPath)
		if errors.Is(err, fs.ErrNotExist) && cfgPath == defaultActionsConfig {
			return nil, fmt.Errorf("%w (the default --config, relative to the working directory; pass -c FILE)", err)
		}
		if err != nil {
			return nil, err
		}
		if auditPath != "" {
			cfg.Audit = auditPath
		}
		return cfg, nil
	}
	flags := func(cmd *cobra.Command) {
		cmd.Flags().StringVarP(&cfgPath, "config", "c", defaultActionsConfig,
			"actions configuration (the default is relative to the working directory, as in a clone of the repository)")
		cmd.Flags().StringVar(&auditPath, "audit", "", "audit log (default: the configuration's audit)")
	}
	// capByRules applies --rules, else the configuration's rules_file:
	// each rule's actions setting caps the mode (see Transits.RuleModes).
	capByRules := func(tr *actions.Transits, cfg *actions.Config) error {
		path := rulesPath
		if path == "" {
			path = cfg.RulesFile
		}
		if path == "" {
			return nil
		}
		modes, err := ruleModes(path)
		tr.RuleModes = modes
		return err
	}

	check := &cobra.Command{
		Use:   "check CONFIG",
		Short: "Validate an actions configuration (file:line: reason on error)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := actions.LoadConfig(args[0])
			if err != nil {
				return err
			}
			if err := cfg.CheckDeploy(args[0]); err != nil {
				return err
			}
			// What serve checks before it binds or dials, and the files it
			// would load: a deployment's mistakes before it starts.
			pre, err := preflight(cfg)
			if err != nil {
				return err
			}
			n := 0
			for _, s := range cfg.Sites {
				n += len(s.Transits)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, mode %s, %d sites, %d transits\n", args[0], cfg.Mode, len(cfg.Sites), n)
			if pre.secret == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: no webhook secret in %s: serve would refuse every alert event posted\n", args[0], cfg.Serve.SecretEnv)
			}
			return nil
		},
	}

	var mode string
	var memory, text bool
	replayC := &cobra.Command{
		Use:   "replay [--config F] [--mode M] [ALERTS.jsonl|-]",
		Short: "Run the transit actions on alert events (JSON lines from `outagewatch replay`); prints the action events",
		Long: `Feeds alert events, one JSON object per line (the output of outagewatch
replay, or a file of it), to the transit-port shutdown actuator, and prints
the events of the actions it takes or refuses. After the last event the
clock moves on by the hold time, so restores show too. In dry-run (the
configuration's default) nothing is changed and the audit log is kept in
memory unless --audit is given.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadCfg()
			if err != nil {
				return err
			}
			if mode != "" {
				cfg.Mode = mode
			}
			if memory || (cfg.Mode != actions.ModeEnforce && auditPath == "") {
				cfg.Audit = ""
			}
			in := cmd.InOrStdin()
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			sink := alerting.NewJSONL("actions", out)
			emit := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
			if text {
				emit = func(ev *alerting.Event) {
					fmt.Fprintf(out, "%s  %-8s  %s  (action %v)\n", ev.At.Format(time.RFC3339), ev.Status, ev.Summary, ev.Details["action"])
				}
			}
			tr, closeAll, err := newTransits(cfg, emit)
			if err != nil {
				return err
			}
			defer closeAll()
			if err := capByRules(tr, cfg); err != nil {
				return err
			}
			ctx := cmd.Context()
			var last time.Time
			sc := bufio.NewScanner(in)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			line, bad := 0, 0
			for sc.Scan() {
				line++
				if len(strings.TrimSpace(sc.Text())) == 0 {
					continue
				}
				var ev alerting.Event
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "line %d: not an alert event: %v\n", line, err)
					continue
				}
				if err := tr.Send(ctx, &ev); err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
				last = ev.At
			}
			if err := sc.Err(); err != nil {
				return err
			}
			if !last.IsZero() && cfg.Hold > 0 {
				if err := tr.Advance(ctx, last.Add(cfg.Hold)); err != nil {
					return err
				}
			}
			if bad > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d lines skipped\n", bad)
			}
			return nil
		},
	}
	replayC.Flags().StringVar(&mode, "mode", "", "override the configuration's mode (off, dry-run, enforce)")
	replayC.Flags().BoolVar(&memory, "no-audit", false, "keep the audit log in memory even in enforce mode")
	replayC.Flags().BoolVar(&text, "text", false, "one line per action instead of JSON events")
	replayC.Flags().StringVar(&rulesPath, "rules", "", "rules file or directory whose actions settings cap the mode (a rule without one is off)")
	flags(replayC)

	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--audit F]",
		Short: "List the audit log: who did what, why, when, and the undo",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := auditPath
			if path == "" {
				cfg, err := loadCfg()
				if err != nil {
					return err
				}
				path = cfg.Audit
			}
			a, err := actions.OpenAudit(path)
			if err != nil {
				return err
			}
			recs, err := a.Records()
			if err != nil {
				return err
			}
			return printRecords(cmd.OutOrStdout(), recs, asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "JSON lines")
	flags(list)

	undo := &cobra.Command{
		Use:   "undo ID",
		Short: "Restore the sessions a shutdown took down",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadCfg()
			if err != nil {
				return err
			}
			tr, closeAll, err := newTransits(cfg, nil)
			if err != nil {
				return err
			}
			defer closeAll()
			r, err := tr.Undo(cmd.Context(), args[0], who)
			if err != nil {
				return err
			}
			return printRecords(cmd.OutOrStdout(), []actions.Record{r}, false)
		},
	}
	undo.Flags().StringVar(&who, "who", os.Getenv("USER"), "who undoes it, for the audit log")
	flags(undo)

	override := &cobra.Command{
		Use:   "override SITE ASN up|down|auto",
		Short: "Keep a transit up (restoring it now) or down whatever the alerts say; auto clears",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			asn, err := strconv.ParseUint(strings.TrimPrefix(strings.ToUpper(args[1]), "AS"), 10, 32)
			if err != nil {
				return fmt.Errorf("asn %q: want a number such as 1299", args[1])
			}
			cfg, err := loadCfg()
			if err != nil {
				return err
			}
			tr, closeAll, err := newTransits(cfg, nil)
			if err != nil {
				return err
			}
			defer closeAll()
			r, err := tr.Override(cmd.Context(), args[0], uint32(asn), args[2], who)
			if err != nil {
				return err
			}
			return printRecords(cmd.OutOrStdout(), []actions.Record{r}, false)
		},
	}
	override.Flags().StringVar(&who, "who", os.Getenv("USER"), "who sets it, for the audit log")
	flags(override)

	var listen, topology, tmTopic, tmMode, tmWebhook, tmPlanTopic, deciderTopic string
	var tmBrokers, tmAnycast []string
	var tmLearn bool
	serve := &cobra.Command{
		Use:   "serve [--config F] [--listen ADDR] [--topology SCENARIO.yaml [--tm-topic dcload ...]]",
		Short: "Act on alert events posted by outagewatch's actions sink; serve the audit log, undo and capacity",
		Long: `Listens for alert events from outagewatch run's actions sink (POST
/api/v1/alerts/webhook, HMAC-SHA256 signed with the secret in the variable
serve.secret_env names, $OUTAGEWATCH_WEBHOOK_SECRET by default) and runs
the transit actions on them; unsigned posts, posts whose signed timestamp
is more than serve.max_skew (5m) from this host's clock and a delivery
posted twice are refused. Enforce mode does not start without the secret.
Restores fall due on the wall clock. Every action goes out as an alert
event through the configuration's sinks. It also serves GET
/api/v1/actions (the audit log), POST /api/v1/actions/{id}/undo (bearer
token from serve.token_env), /metrics and, with a Traffic Manager
topology, GET /api/v1/capacity?dc=X&need=MS.

Everything is read from the configuration file (docs/actions.md lists
its keys); the flags override it. With traffic_manager.topic it also runs
the Traffic Manager live: dcload reports from that Kafka topic (consumer
group outagewatch-tm) are planned on the topology every window, the
changes go to the webhook and plan topic in enforce mode, the capacity
endpoint answers from the latest window, and /metrics carries the
outagewatch_tm_* series.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadCfg()
			if err != nil {
				return err
			}
			f := cmd.Flags()
			// changed: the flag or its deprecated spelling was given.
			changed := func(names ...string) bool { return slices.ContainsFunc(names, f.Changed) }
			set := func(name string, dst *string, v string) {
				if changed(name, map[string]string{"mode": "tm-mode"}[name]) {
					*dst = v
				}
			}
			set("listen", &cfg.Serve.Listen, listen)
			set("topology", &cfg.TrafficManager.Topology, topology)
			set("decider-topic", &cfg.Serve.DeciderTopic, deciderTopic)
			set("tm-topic", &cfg.TrafficManager.Topic, tmTopic)
			set("mode", &cfg.TrafficManager.Mode, tmMode)
			set("tm-webhook", &cfg.TrafficManager.Webhook, tmWebhook)
			set("tm-plan-topic", &cfg.TrafficManager.PlanTopic, tmPlanTopic)
			set("rules", &cfg.RulesFile, rulesPath)
			if changed("brokers", "kafka-brokers") {
				cfg.Kafka.Brokers = tmBrokers
			}
			if f.Changed("learn") {
				cfg.TrafficManager.Learn = tmLearn
			}
			if f.Changed("tm-anycast") {
				cfg.TrafficManager.Anycast = tmAnycast
			}
			return serveActions(cmd.Context(), cfg)
		},
	}
	serve.Flags().StringVar(&listen, "listen", actions.DefaultListen, "HTTP listen address (serve.listen)")
	serve.Flags().StringVar(&topology, "topology", "", "Traffic Manager topology, a scenario file; its starting state answers capacity queries (traffic_manager.topology)")
	serve.Flags().StringVar(&deciderTopic, "decider-topic", "", "share the sites with other instances: each site's transit actions are taken by the instance owning its partition of this topic (serve.decider_topic)")
	serve.Flags().StringVar(&tmTopic, "tm-topic", "", "plan live from this dcload topic, with a topology (traffic_manager.topic)")
	serve.Flags().StringSliceVar(&tmBrokers, "brokers", nil, "Kafka brokers of the decider and the Traffic Manager (kafka.brokers)")
	serve.Flags().StringVar(&tmMode, "mode", actions.ModeDryRun, "Traffic Manager mode: dry-run or enforce (traffic_manager.mode)")
	deprecatedAlias(serve.Flags(), "brokers", "kafka-brokers")
	deprecatedAlias(serve.Flags(), "mode", "tm-mode")
	serve.Flags().StringVar(&tmWebhook, "tm-webhook", "", "POST plan changes here in enforce mode, signed with the serve secret (traffic_manager.webhook)")
	serve.Flags().StringVar(&tmPlanTopic, "tm-plan-topic", "", "write plan changes to this Kafka topic in enforce mode (traffic_manager.plan_topic)")
	serve.Flags().BoolVar(&tmLearn, "learn", false, "learn maximum thresholds from the reports' SLI against CPU (traffic_manager.learn)")
	serve.Flags().StringArrayVar(&tmAnycast, "tm-anycast", nil, "LOCATION=PREFIX[,PREFIX]@NEXTHOP: withdraw these through gobgp (the config's gobgp) when the location is drained, in enforce mode; repeat per location (traffic_manager.anycast)")
	serve.Flags().StringVar(&rulesPath, "rules", "", "rules file or directory whose actions settings cap the mode; a rule without one is off (rules_file)")
	flags(serve)

	c.AddCommand(check, replayC, list, undo, override, serve, planCmd(), tmCmd(), predictCmd())
	return c
}

// newTransits builds the actuator with a gobgpd connection per site in
// enforce mode (and for undo or override, which act on past enforce
// actions whatever the mode is now).
func newTransits(cfg *actions.Config, emit func(*alerting.Event)) (*actions.Transits, func(), error) {
	audit, err := actions.OpenAudit(cfg.Audit)
	if err != nil {
		return nil, nil, err
	}
	speakers := map[string]actions.Speaker{}
	conns := map[string]*actions.GRPC{}
	closeAll := func() {
		for _, g := range conns {
			g.Close()
		}
	}
	for _, name := range cfg.SiteNames() {
		addr := cfg.Sites[name].GoBGP
		if addr == "" {
			continue
		}
		if conns[addr] == nil {
			g, err := actions.DialGoBGP(addr)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			conns[addr] = g
		}
		speakers[name] = conns[addr]
	}
	tr, err := actions.NewTransits(cfg, speakers, audit, emit)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return tr, closeAll, nil
}

func printRecords(w io.Writer, recs []actions.Record, asJSON bool) error {
	// A shutdown already restored, or whose gobgp call failed (refused
	// with its id), has nothing left to undo.
	done := map[string]bool{}
	for _, r := range recs {
		if r.Of != "" && (r.Op == actions.OpRestore || r.Op == actions.OpRefused) {
			done[r.Of] = true
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		for i := range recs {
			if done[recs[i].ID] {
				recs[i].Undo = ""
			}
			if err := enc.Encode(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tWHO\tOP\tMODE\tSITE\tTRANSIT\tSESSIONS\tWHY\tUNDO")
	for _, r := range recs {
		if done[r.ID] {
			r.Undo = ""
		}
		what := r.Why
		if r.Keep != "" {
			what = "keep " + r.Keep
		}
		if r.Of != "" {
			what += " (of " + r.Of + ")"
		}
		if !r.Made.IsZero() {
			what += "; carried out " + r.Made.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\tAS%d %s\t%s\t%s\t%s\n", r.ID, r.Time.Format(time.RFC3339), r.Who, r.Op, r.Mode, r.Site,
			r.ASN, r.Transit, strings.Join(r.Sessions, ","), what, r.Undo)
	}
	return tw.Flush()
}
