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

func runCmd() *cobra.Command {
	var cfgFile, stage string
	c := &cobra.Command{
		Use:   "run --config F",
		Short: "Run the live service: consume the stream topics from Kafka, alert to the configured sinks",
		Long: `run consumes the configured topics in one Kafka consumer group, runs them
through the same pipeline as replay, checkpoints its state to data_dir before
committing offsets, and serves /metrics, /healthz, /readyz and /api/v1/alerts
(127.0.0.1:9310 unless http.listen says otherwise). SIGTERM or SIGINT writes
a final checkpoint and flushes pending alerts. See deploy/outagewatch.yaml.

One instance needs nothing more. For more than one, run the two stages
(docs/deployment.md): --stage 1 pre-aggregates the input partitions it is
assigned into the internal topic, --stage 2 merges and judges the partitions
of that topic, --stage both does both in one process; any number of
instances of each give the alerts of one.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := service.LoadConfig(cfgFile)
			if errors.Is(err, fs.ErrNotExist) && !cmd.Flags().Changed("config") {
				return fmt.Errorf("%w (the default --config, relative to the working directory; pass -c FILE, or start from deploy/outagewatch.yaml)", err)
			}
			if err != nil {
				return err
			}
			if memoryLimit == "" && cfg.MemoryLimit != "" {
				if err := applyMemoryLimit(cfgFile+": memory_limit", cfg.MemoryLimit); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			if stage != "" {
				st, err := service.NewStaged(cfg, service.Options{}, stage)
				if err != nil {
					return err
				}
				return st.Run(ctx)
			}
			svc, err := service.New(cfg, service.Options{Sinks: []alerting.Sink{statuspage.NewStore()}}) // the status page lists ended outages too
			if err != nil {
				return err
			}
			svc.WatchMap(ctx, 30*time.Second) // map file edits (or SIGHUP) take effect without a restart
			return svc.Run(ctx)
		},
	}
	c.Flags().StringVarP(&cfgFile, "config", "c", "outagewatch.yaml",
		"configuration file (the default is relative to the working directory; deploy/outagewatch.yaml is the annotated example)")
	c.Flags().StringVar(&stage, "stage", "", "run as a stage of a scaled-out service: 1, 2 or both (docs/deployment.md)")
	return c
}
