package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

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
one; --stage 1 or --stage 2 runs one stage only, to scale them apart.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := service.LoadConfig(cfgFile)
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
			// The page lists ended outages too: a store among the sinks.
			st, err := service.NewStaged(cfg, service.Options{Sinks: []alerting.Sink{statuspage.NewStore()}}, stage)
			if err != nil {
				return err
			}
			return st.Run(ctx)
		},
	}
	c.Flags().StringVarP(&cfgFile, "config", "c", "outagewatch.yaml", "configuration file")
	c.Flags().StringVar(&stage, "stage", service.StageBoth, "the stages run here: both, or 1 or 2 to scale them apart (docs/runtime.md)")
	return c
}
