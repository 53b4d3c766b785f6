package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/rules"
)

func rulesCmd() *cobra.Command {
	c := &cobra.Command{Use: "rules", Short: "Work with rules files"}
	c.AddCommand(&cobra.Command{
		Use:   "check FILE...",
		Short: "Validate rules files; errors name the file, the line and the reason",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, f := range args {
				set, err := rules.Load(f)
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d rules OK\n", f, len(set.Rules))
				if set.Severity != nil && set.Severity.File == f {
					fmt.Fprintf(cmd.OutOrStdout(), "%s:%d: %s\n", f, set.Severity.Line, set.Severity.Summary())
				}
			}
			if bad > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d of %d rules files invalid", bad, len(args))}
			}
			return nil
		},
	})
	return c
}
