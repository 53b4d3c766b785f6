package main

import (
	"context"
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
	var cfgFile string
	c := &cobra.Command{
		Use:   "run --config F",
		Short: "Run the live service: consume the stream topics from Kafka, alert to the configured sinks",
		Long: `run consumes the configured topics in one Kafka consumer group, runs them
through the same pipeline as replay, checkpoints its state to data_dir before
committing offsets, and serves /metrics, /healthz, /readyz and /api/v1/alerts
(127.0.0.1:9310 unless http.listen says otherwise). SIGTERM or SIGINT writes
a final checkpoint and flushes pending alerts. See deploy/outagewatch.yaml.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := service.LoadConfig(cfgFile)
			if err != nil {
				return err
			}
			svc, err := service.New(cfg, service.Options{Sinks: []alerting.Sink{statuspage.NewStore()}}) // the status page lists ended outages too
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			svc.WatchMap(ctx, 30*time.Second) // map file edits (or SIGHUP) take effect without a restart
			return svc.Run(ctx)
		},
	}
	c.Flags().StringVarP(&cfgFile, "config", "c", "outagewatch.yaml", "configuration file")
	return c
}
