package service

import (
	"strings"
	"testing"
)

// memory_limit is checked at load: a setting that does not parse names
// the file and its line; a good one is kept for the run command to apply.
func TestConfigMemoryLimit(t *testing.T) {
	base := "kafka:\n  brokers: [b]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	for text, want := range map[string]string{
		base + "memory_limit: lots\n": `c.yaml:5: memory_limit: memory limit "lots": want a size such as 6GiB`,
		base + "memory_limit: 0%\n":   `c.yaml:5: memory_limit: memory limit "0%": a share must be over 0`,
	} {
		_, err := ParseConfig("c.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config\n%s\nerror %v, want it to contain %q", text, err, want)
		}
	}
	c, err := ParseConfig("c.yaml", []byte(base+"memory_limit: 6GiB\n"))
	if err != nil || c.MemoryLimit != "6GiB" {
		t.Fatalf("memory_limit 6GiB: %+v, %v", c, err)
	}
}
