package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/rules"
)

func rulesCmd() *cobra.Command {
	c := &cobra.Command{Use: "rules", Short: "Check rules files, or write out the shipped ones to edit"}
	var list bool
	check := &cobra.Command{
		Use:   "check [--list] [FILE|DIR]...",
		Short: "Validate rules files; errors name the file, the line and the reason",
		Long: `Check validates each rules file as the service and replay load it, and
prints what each sets. A directory is checked as --rules DIR loads it: its
*.yaml and *.yml files as one set, so that a signal declared in one file and judged
in another checks, and a rule name used twice across files does not. With
no argument it checks the shipped rules. --list also prints each rule as
it is in force, defaults filled in: where it is, its detector, signals
and entities, what it fires on (and the noise bar its noise param sets),
its severity and its actions.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				set, err := rules.Default()
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "shipped rules (%s): %d rules OK\n", set.File, len(set.Rules))
				if list {
					listRules(out, set)
				}
				return nil
			}
			bad := 0
			for _, f := range args {
				set, err := loadChecked(f)
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				fmt.Fprintf(out, "%s: %d rules OK\n", f, len(set.Rules))
				if list {
					listRules(out, set)
				}
				if sev := set.Severity; sev != nil && (sev.File == f || filepath.Dir(sev.File) == filepath.Clean(f)) {
					fmt.Fprintf(out, "%s:%d: %s\n", sev.File, sev.Line, sev.Summary())
				}
			}
			if bad > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d of %d rules files invalid", bad, len(args))}
			}
			return nil
		},
	}
	check.Flags().BoolVarP(&list, "list", "l", false, "also print each rule as it is in force: detector, signals, entities, what it fires on, severity, actions")
	c.AddCommand(check)
	var force bool
	export := &cobra.Command{
		Use:   "export DIR",
		Short: "Write the shipped rules into DIR, one file per input, to edit and load with --rules DIR",
		Long: `Export writes the rules the binary ships (10-traffic.yaml, 20-dns.yaml, …)
into DIR, so that a deployment without the source has them to start from.
Edit them, check them with 'outagewatch rules check DIR', and load them
with --rules DIR, or rules: DIR in the service's config. A file already in
DIR is not overwritten without --force.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			written, err := rules.WriteDefault(args[0], force)
			for _, p := range written {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w (--force overwrites)", err)
			}
			return err
		},
	}
	export.Flags().BoolVar(&force, "force", false, "overwrite files of the same names in DIR")
	c.AddCommand(export)
	return c
}

// loadChecked loads a rules file, or a directory's files as one set.
func loadChecked(path string) (*rules.Set, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return rules.Load(path)
	}
	return rules.LoadAll(path)
}

// listRules prints each rule of set in a line and what it fires on in
// the next, in the words alerts carry (alerting.ThresholdText) and the
// noise bar besides, with the defaults the rules file left out filled in.
func listRules(w io.Writer, set *rules.Set) {
	for _, r := range set.Rules {
		signals := make([]string, len(r.Signals))
		for i, s := range r.Signals {
			signals[i] = s.String()
		}
		where := strings.Join(r.Entities, ", ")
		if len(r.Exclude) > 0 {
			where += " except " + strings.Join(r.Exclude, ", ")
		}
		fmt.Fprintf(w, "  %s:%d: %s: %s on %s of %s; severity %s, actions %s\n",
			r.File, r.Line, r.Name, r.Detector, strings.Join(signals, ", "), where, r.Severity, r.Actions)
		var on []string
		for _, t := range []string{alerting.ThresholdText(r.Params), alerting.NoiseText(r.Params)} {
			if t != "" {
				on = append(on, t)
			}
		}
		if len(on) > 0 {
			fmt.Fprintf(w, "      fires on: %s\n", strings.Join(on, "; "))
		}
	}
}
