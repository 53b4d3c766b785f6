package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --stage takes 1, 2 or both; anything else is refused before Kafka is
// touched.
func TestRunStageFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "outagewatch.yaml")
	os.WriteFile(cfg, []byte("kafka:\n  brokers: [127.0.0.1:1]\n  topics:\n    - {name: flows, stream: flows, format: goflow2-pb}\ndata_dir: "+dir+"\n"), 0o644)
	c := runCmd()
	c.SetArgs([]string{"--config", cfg, "--stage", "3"})
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	if err == nil || !strings.Contains(err.Error(), `--stage "3": want 1, 2 or both`) {
		t.Fatalf("err %v", err)
	}
}

// The demo's flags and its fixture argument belong to --demo: without it
// they are refused, not ignored.
func TestRunDemoFlagsNeedDemo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"uganda-2021-01-13"}, `unexpected argument "uganda-2021-01-13"`},
		{[]string{"--speed", "100"}, "--speed is a flag of run --demo"},
		{[]string{"--listen", "127.0.0.1:0"}, "--listen is a flag of run --demo"},
		{[]string{"--demo", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"--demo", "--speed", "-1"}, "--speed -1: want 0"},
		{[]string{"--demo", "no-such-fixture.yaml"}, "no-such-fixture.yaml"},
	} {
		c := runCmd()
		c.SetArgs(tc.args)
		c.SilenceUsage, c.SilenceErrors = true, true
		err := c.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
