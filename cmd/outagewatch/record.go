package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/ingest/recordfile"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/service"
)

func init() { extraCommands = append(extraCommands, recordCmd) }

func recordCmd() *cobra.Command {
	var (
		o       kafkaio.RecordOptions
		out     string
		cfgFile string
	)
	c := &cobra.Command{
		Use:   "record --topic T --out F [--config F | --brokers B --stream S --format F] [--follow]",
		Short: "Dump a Kafka topic to a file that replay accepts (" + recordfile.Ext + ", gzipped if F ends in .gz)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Topic == "" || out == "" {
				return fmt.Errorf("record: --topic and --out are required")
			}
			if cfgFile != "" {
				cfg, err := service.LoadConfig(cfgFile)
				if err != nil {
					return err
				}
				if len(o.Brokers) == 0 {
					o.Brokers = cfg.Kafka.Brokers
				}
				if o.Dialer, err = cfg.KafkaDialer(); err != nil { // the config's TLS and SASL
					return err
				}
				for _, t := range cfg.Kafka.Topics {
					if t.Name == o.Topic && o.Stream == "" {
						o.Stream, o.Format = t.Stream, t.Format
					}
				}
			}
			if len(o.Brokers) == 0 {
				o.Brokers = []string{"localhost:9092"}
			}
			if o.Stream == "" || o.Format == "" {
				return fmt.Errorf("record: topic %s: give --stream and --format (or a --config that lists the topic)", o.Topic)
			}
			if !strings.HasSuffix(out, recordfile.Ext) && !strings.HasSuffix(out, recordfile.Ext+".gz") {
				return fmt.Errorf("record: --out must end in %s or %s.gz so that replay recognises it", recordfile.Ext, recordfile.Ext)
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			defer f.Close()
			bw := bufio.NewWriterSize(f, 1<<20)
			var w io.Writer = bw
			var gz *gzip.Writer
			if strings.HasSuffix(out, ".gz") {
				gz = gzip.NewWriter(bw)
				w = gz
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			n, rerr := kafkaio.Record(ctx, o, w)
			if gz != nil {
				if err := gz.Close(); err != nil && rerr == nil {
					rerr = err
				}
			}
			if err := bw.Flush(); err != nil && rerr == nil {
				rerr = err
			}
			if err := f.Sync(); err != nil && rerr == nil {
				rerr = err
			}
			slog.Info("recorded", "topic", o.Topic, "records", n, "out", out)
			return rerr
		},
	}
	c.Flags().StringVar(&o.Topic, "topic", "", "topic to dump")
	c.Flags().StringVarP(&out, "out", "o", "", "output file ("+recordfile.Ext+" or "+recordfile.Ext+".gz)")
	c.Flags().StringVarP(&cfgFile, "config", "c", "", "take brokers and the topic's stream/format from this service config")
	c.Flags().StringSliceVar(&o.Brokers, "brokers", nil, "Kafka brokers (default localhost:9092)")
	c.Flags().StringVar(&o.Stream, "stream", "", "stream kind the topic carries (flows, bgp, dns, quality, dcload)")
	c.Flags().StringVar(&o.Format, "format", "", "format of the topic's records (goflow2-pb, goflow2-json, ...)")
	c.Flags().BoolVar(&o.Follow, "follow", false, "keep recording new records until interrupted")
	return c
}
