package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/service"
)

// The README opens where a newcomer starts: its first two commands as CI
// and the hooks expect them, then on the first screen how to build or
// install, replay, test and try the live service.
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if lines[2] != "    go run ./cmd/outagewatch replay     # replay the bundled Uganda 2021 shutdown: alert events as JSON lines" ||
		lines[3] != "    go test ./...                        # run the tests" {
		t.Fatalf("the README's first two commands changed:\n%s\n%s", lines[2], lines[3])
	}
	screen := strings.Join(lines[:30], "\n")
	for _, want := range []string{"    go build -o outagewatch ./cmd/outagewatch", "    go install ./cmd/outagewatch",
		"    go run ./cmd/outagewatch replay --text iberia-2025-04-28", "    go test ./...", "    go run ./cmd/outagewatch run --demo"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the README's first 30 lines lack %q", want)
		}
	}
}

// The README's minimal live config loads as it is written.
func TestReadmeMinimalConfig(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("<!-- the minimal live config: go test ./cmd/outagewatch checks it -->\n```yaml\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("```"))
	if !ok || !ok2 {
		t.Fatal("README: no minimal config block")
	}
	f := filepath.Join(t.TempDir(), "outagewatch.yaml")
	if err := os.WriteFile(f, block, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := service.LoadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sinks) != 2 || c.Sinks[1].Type != "slack" || !strings.HasSuffix(c.Sinks[1].EventURL, "/incident/") ||
		c.HTTP.ChartHistory != 7*24*time.Hour || c.Kafka.Topics[0].Format != "goflow2-pb" {
		t.Fatalf("minimal config: %+v", c)
	}
}

// Every event_url the documents show points at the page's /incident/,
// the path the outage page serves.
func TestDocsEventURLIsTheIncidentPage(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md", "../../deploy/outagewatch.yaml")
	url := regexp.MustCompile(`event_url: *"?([^"\s}]+)`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range url.FindAllSubmatch(b, -1) {
			n++
			if !strings.HasSuffix(string(m[1]), "/incident/") {
				t.Errorf("%s: event_url %s, want the page's /incident/", f, m[1])
			}
		}
	}
	if n < 3 {
		t.Errorf("only %d event_url examples found", n)
	}
}
