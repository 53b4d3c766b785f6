package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/service"
	"github.com/outagewatch/outagewatch/statuspage"
)

func init() { extraCommands = append(extraCommands, runCmd) }

// mapCheckInterval is how often `run` looks whether the mapping file
// changed: a stat every 30 s costs nothing, and a map built by `netmap
// build` daily need not take effect within seconds (SIGHUP does that).
const mapCheckInterval = 30 * time.Second

func runCmd() *cobra.Command {
	var cfgFile, stage string
	demo := demoOptions{fixture: demoFixture, speed: demoSpeed, lead: demoLead}
	var demoOn, check bool
	c := &cobra.Command{
		Use:   "run --config F | run --demo [FIXTURE]",
		Short: "Run the live service: consume the stream topics from Kafka, alert to the configured sinks",
		Long: `run consumes the configured topics from Kafka through the per-partition
pipeline, the same stages replay drives in process, and alerts to the
configured sinks. It serves /metrics, /healthz, /readyz, the alert, event
and silence API, the outage page and the manual checkpoint (127.0.0.1:9310
unless http.listen says otherwise). SIGTERM or SIGINT checkpoints and
flushes pending alerts. See deploy/outagewatch.yaml and docs/runtime.md.

Both stages run in this process by default: stage one pre-aggregates the
input partitions it is assigned into the internal topic, stage two merges
and judges the partitions of that topic, its state on a changelog topic.
Any number of instances, killed and restarted at will, give the alerts of
one; --stage 1 or --stage 2 runs one stage only, to scale them apart.

run --demo needs no Kafka and no config: it starts an in-process broker,
plays a bundled incident into it (uganda-2021-01-13 unless FIXTURE names
another) at --speed times real time, from --lead before the incident's first
labelled onset (the weeks of history before go at once), and runs the live
service on it, both stages in one process. The outage page, with the
service's API, is at --listen (printed); alerts also go to stdout.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if demoOn {
				if check {
					return fmt.Errorf("run: --check checks a config, and run --demo has none of yours")
				}
				if len(args) == 1 {
					demo.fixture = args[0]
				}
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
				defer stop()
				return runDemo(ctx, demo)
			}
			if len(args) > 0 {
				return fmt.Errorf("run: unexpected argument %q (a fixture is an argument of run --demo only)", args[0])
			}
			for _, f := range []string{"speed", "lead", "listen", "data-dir"} {
				if cmd.Flags().Changed(f) {
					return fmt.Errorf("run: --%s is a flag of run --demo (the service takes it from its config)", f)
				}
			}
			cfg, err := service.LoadConfig(cfgFile)
			if errors.Is(err, fs.ErrNotExist) && !cmd.Flags().Changed("config") {
				return fmt.Errorf("%w (the default --config, relative to the working directory; pass -c FILE, or start from deploy/outagewatch.yaml)", err)
			}
			if err != nil {
				return err
			}
			if check {
				lines, err := service.Check(cfg)
				for _, l := range lines {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", cfgFile, l)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", cfgFile, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: OK (checked without contacting a broker)\n", cfgFile)
				return nil
			}
			if memoryLimit == "" && cfg.MemoryLimit != "" {
				if err := applyMemoryLimit(cfgFile+": memory_limit", cfg.MemoryLimit); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// The page lists ended outages too: a store among the sinks.
			st, err := service.NewStaged(cfg, service.Options{Sinks: []alerting.Sink{statuspage.NewStore()}}, stage)
			if err != nil {
				return err
			}
			st.WatchMap(ctx, mapCheckInterval)
			st.WatchRules(ctx)
			return st.Run(ctx)
		},
	}
	c.Flags().StringVarP(&cfgFile, "config", "c", "outagewatch.yaml",
		"configuration file (the default is relative to the working directory; deploy/outagewatch.yaml is the annotated example)")
	c.Flags().BoolVar(&check, "check", false, "load and check the config and all it names (rules, map, TLS and SASL files, secrets), print what it holds and exit, without contacting Kafka")
	c.Flags().StringVar(&stage, "stage", service.StageBoth, "the stages run here: both, or 1 or 2 to scale them apart (docs/runtime.md)")
	c.Flags().BoolVar(&demoOn, "demo", false, "run the live service on an in-process Kafka that a bundled incident plays into (docs/demo.md)")
	c.Flags().Float64Var(&demo.speed, "speed", demo.speed, "with --demo, the multiple of real time the incident plays at")
	c.Flags().DurationVar(&demo.lead, "lead", demo.lead, "with --demo, how long before the incident's first labelled onset the data starts playing at --speed")
	c.Flags().StringVar(&demo.listen, "listen", service.DefaultListen, "with --demo, the address of the outage page and the service's API")
	c.Flags().StringVar(&demo.dataDir, "data-dir", "", "with --demo, the service's data directory (default: a temporary one, removed at exit)")
	return c
}
