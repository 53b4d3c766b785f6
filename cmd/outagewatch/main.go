// Command outagewatch detects Internet outages from flows, BGP, DNS and
// quality measurements, live from Kafka or replayed from files and incident
// fixtures.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	// Input formats register their decoders, file readers and fixture
	// sections.
	_ "github.com/outagewatch/outagewatch/ingest/flows"
)

func main() {
	root := &cobra.Command{
		Use:           "outagewatch",
		Short:         "Streaming Internet outage and anomaly detector",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var verbose bool
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		lvl := slog.LevelInfo
		if verbose {
			lvl = slog.LevelDebug
		}
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
	}
	root.AddCommand(replayCmd(), scoreCmd(), rulesCmd())
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "outagewatch:", err)
		os.Exit(exitCode(err))
	}
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
