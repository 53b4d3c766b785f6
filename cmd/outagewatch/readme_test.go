package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

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

// Every outagewatch command the README and docs show names a command that
// exists and flags it takes, so that a renamed flag or command cannot
// leave a document behind. (What the commands do is tested where it is
// built: the replays, scores and examples each have their test.)
func TestDocumentedCommandsParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range documentedCommands(string(b)) {
			args := strings.Fields(line)
			n++
			root := rootCmd()
			root.InitDefaultVersionFlag()
			cmd, rest, err := root.Find(args)
			if err == nil && cmd == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				err = errUnknown
			}
			if err == nil {
				cmd.InitDefaultHelpFlag()
				err = cmd.ParseFlags(rest)
			}
			if err == nil {
				// The documents use the current spelling of each flag.
				cmd.Flags().Visit(func(fl *pflag.Flag) {
					if fl.Deprecated != "" {
						err = fmt.Errorf("--%s: %s", fl.Name, fl.Deprecated)
					}
				})
			}
			if err != nil {
				t.Errorf("%s: outagewatch %s: %v", filepath.Base(f), line, err)
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d documented commands found", n)
	}
}

var errUnknown = errors.New("no such command")

// envAssignment is a VAR=value before a command.
var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=\S* +`)

// documentedCommands returns the arguments of each outagewatch command in
// the indented code of a Markdown text: continued lines joined, the
// environment before it, the comment, pipes and redirections cut off,
// quotes dropped.
func documentedCommands(md string) []string {
	var out []string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "    ") {
			continue
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		for _, seg := range strings.Split(l, " | ") {
			seg = strings.TrimPrefix(strings.TrimSpace(seg), "$ ")
			// The environment a command is given (VAR=value ...).
			for envAssignment.MatchString(seg) {
				seg = envAssignment.ReplaceAllString(seg, "")
			}
			var rest string
			switch {
			case strings.HasPrefix(seg, "go run ./cmd/outagewatch"):
				rest = strings.TrimPrefix(seg, "go run ./cmd/outagewatch")
			case strings.HasPrefix(seg, "outagewatch "):
				rest = strings.TrimPrefix(seg, "outagewatch")
			default:
				continue
			}
			if c := strings.Index(rest, " #"); c >= 0 {
				rest = rest[:c]
			}
			var args []string
			for _, a := range strings.Fields(rest) {
				if strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") || strings.HasPrefix(a, "<") {
					continue
				}
				args = append(args, strings.Trim(a, `"'`))
			}
			out = append(out, strings.Join(args, " "))
		}
	}
	return out
}

// A command given its environment is read as the command, so that it is
// parsed like any other.
func TestDocumentedCommandsWithEnvironment(t *testing.T) {
	md := "text\n\n    OUTAGEWATCH_WEBHOOK_SECRET=... go run ./cmd/outagewatch actions serve --config deploy/actions.yaml  # the live actuator\n" +
		"    A=1 B_2=x outagewatch run --config outagewatch.yaml >/dev/null\n"
	got := strings.Join(documentedCommands(md), "\n")
	if want := "actions serve --config deploy/actions.yaml\nrun --config outagewatch.yaml"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
