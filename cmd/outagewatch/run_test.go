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
