package service

import (
	"strings"
	"testing"
)

// The outage page links out unless http.external_links turns it off; a
// value that is no boolean fails at load with its line.
func TestExternalLinksSetting(t *testing.T) {
	base := "kafka:\n  brokers: [b:9092]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	for in, want := range map[string]bool{"": true, "http:\n  external_links: false\n": false, "http:\n  external_links: true\n": true} {
		c, err := ParseConfig("c.yaml", []byte(base+in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if c.HTTP.Links() != want {
			t.Errorf("%q: links %v, want %v", in, c.HTTP.Links(), want)
		}
	}
	if _, err := ParseConfig("c.yaml", []byte(base+"http:\n  external_links: maybe\n")); err == nil || !strings.Contains(err.Error(), "c.yaml:6") {
		t.Errorf("external_links: maybe: %v, want an error at c.yaml:6", err)
	}
}
