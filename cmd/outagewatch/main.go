// Command outagewatch detects Internet outages from flows, BGP, DNS and
// quality measurements, live from Kafka or replayed from files and incident
// fixtures.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/memlimit"
	"github.com/outagewatch/outagewatch/service"

	// Input formats register their decoders, file readers and fixture
	// sections.
	_ "github.com/outagewatch/outagewatch/ingest/flows"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "outagewatch:", err)
		os.Exit(exitCode(err))
	}
}

// rootCmd is the command with every subcommand.
func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "outagewatch",
		Short:         "Streaming Internet outage and anomaly detector",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what `outagewatch version` does.
	info, _ := debug.ReadBuildInfo()
	var vb strings.Builder
	printVersion(&vb, info)
	root.Version = vb.String()
	root.SetVersionTemplate("{{.Version}}")
	service.Version = version
	var verbose bool
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	root.PersistentFlags().StringVar(&memoryLimit, "memory-limit", "",
		`soft memory limit of the Go runtime ("6GiB", "75%", "off"): the peak stays near it instead of twice the live heap`)
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		lvl := slog.LevelInfo
		if verbose {
			lvl = slog.LevelDebug
		}
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
		if memoryLimit == "" {
			return nil
		}
		return applyMemoryLimit("--memory-limit", memoryLimit)
	}
	root.AddCommand(replayCmd(), scoreCmd(), scoreboardCmd(), rulesCmd())
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	return root
}

// memoryLimit is the --memory-limit flag; when given it wins over the
// service config's memory_limit.
var memoryLimit string

// applyMemoryLimit sets the runtime's soft memory limit from a setting
// named by from (the flag, a config file).
func applyMemoryLimit(from, setting string) error {
	l, err := memlimit.Parse(setting)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	n, err := memlimit.Apply(l)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if !l.IsZero() {
		slog.Debug("memory limit", "from", from, "bytes", n)
	}
	return nil
}

// extraCommands lets other files of this command add subcommands.
var extraCommands []func() *cobra.Command

// exitError carries an exit code other than 1.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}
