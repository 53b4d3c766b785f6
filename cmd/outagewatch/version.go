package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, versionCmd) }

// version is set at link time by release builds
// (-ldflags "-X main.version=v1.2.3"); otherwise the module's version and
// the VCS revision Go stamped into the binary speak for it.
var version = ""

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go toolchain this binary was built from",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			info, _ := debug.ReadBuildInfo()
			printVersion(cmd.OutOrStdout(), info)
		},
	}
}

func printVersion(w io.Writer, info *debug.BuildInfo) {
	v, rev, at, dirty := version, "", "", false
	if info != nil {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(w, "outagewatch %s\n", v)
	if rev != "" {
		if dirty {
			rev += " (modified)"
		}
		fmt.Fprintf(w, "commit %s\n", rev)
	}
	if at != "" {
		fmt.Fprintf(w, "committed %s\n", at)
	}
	fmt.Fprintf(w, "built with %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
