// Command testkafka runs an in-process Kafka (kfake, which speaks the real
// wire protocol) on fixed loopback ports, so that the documented commands
// that need a broker (`run -c`, `record`, `produce`) can be run as written
// by scripts/doc-commands.sh. It prints the brokers' addresses on one
// line once they listen, and stops on SIGTERM or SIGINT, or by itself
// after -for.
//
//	go run ./scripts/testkafka -ports 9092,9094 -for 10m
//
// It listens on 127.0.0.1 only (kfake binds nothing else). The ports are
// those the documented configs name: 9092 in the README's minimal config,
// 9094 in deploy/outagewatch.host.yaml (the compose Kafka's host port).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	ports := flag.String("ports", "9092", "comma-separated loopback ports, one broker each (0: any free port)")
	maxRun := flag.Duration("for", 10*time.Minute, "stop by itself after this long, stopped or not")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *maxRun)
	defer cancel()
	if err := run(ctx, *ports, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testkafka:", err)
		os.Exit(1)
	}
}

// run starts one broker a port, writes "brokers: ADDR,ADDR" to w once
// they listen, and closes the cluster when ctx ends.
func run(ctx context.Context, portList string, w io.Writer) error {
	var ports []int
	for p := range strings.SplitSeq(portList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("-ports %q: want port numbers such as 9092,9094", portList)
		}
		ports = append(ports, n)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(len(ports)), kfake.Ports(ports...),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("start brokers on 127.0.0.1 ports %s: %w", portList, err)
	}
	defer c.Close()
	addrs := c.ListenAddrs()
	if _, err := fmt.Fprintf(w, "brokers: %s\n", strings.Join(addrs, ",")); err != nil {
		return err
	}
	slog.Info("testkafka listening", "brokers", addrs)
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		slog.Warn("testkafka stops: its time is up", "brokers", addrs)
	} else {
		slog.Info("testkafka stops", "brokers", addrs)
	}
	return nil
}
