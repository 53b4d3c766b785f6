package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/statuspage"
)

// buildBinary builds cmd/outagewatch into a temporary directory, with the
// go tool that runs the test.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "outagewatch")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `run --demo` as a newcomer starts it: one process, no Kafka, no config.
// The outage page lists the Uganda shutdown while the data plays, the
// alerts arrive on stdout, and SIGTERM ends it with status 0.
func TestRunDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and plays four weeks of data")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	// 100 000× plays the week after the lead in about six seconds.
	cmd := exec.Command(bin, "run", "--demo", "--speed", "100000", "--listen", "127.0.0.1:0", "--data-dir", dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, rest lockedBuffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// The first line names the page.
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("stderr: %v", err)
	}
	m := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q names no page", line)
	}
	page := m[1]
	if !strings.Contains(line, "uganda-2021-01-13 plays into an in-process Kafka at 127.0.0.1:") {
		t.Errorf("first line %q", line)
	}
	copied := make(chan struct{})
	go func() { io.Copy(&rest, br); close(copied) }()

	// Poll the page's incident list until Uganda's shutdown is on it.
	const maxPolls = 1200 // 5 minutes at 4 a second, for a loaded machine
	uganda, polls := pollIncident(t, page, maxPolls, func(in statuspage.Incident) bool { return in.Place == "Uganda" })
	if uganda == nil {
		t.Fatalf("no Uganda incident after %d polls; stderr:\n%s", polls, rest.String())
	}
	t.Logf("Uganda listed after %d polls: %v", polls, uganda.Signals)
	// Replay sees routing first: the announced space fell at 13:30, the
	// traffic at 17:00 (the fixture's labels), and on a quiet machine the
	// demo opens the incident at 13:30 too. On a machine loaded for
	// minutes the live service has opened it at 17:00 with the traffic,
	// the BGP drop seen late: logged here, as it depends on how the
	// machine keeps up with 100 000 times real time, not on the demo.
	if want := time.Date(2021, 1, 13, 13, 30, 0, 0, time.UTC); !uganda.Start.Equal(want) {
		t.Logf("incident starts %v; replay opens it at %v", uganda.Start, want)
	}
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(html), "Uganda") || !strings.Contains(string(html), "outagewatch demo: uganda-2021-01-13") {
		t.Errorf("page does not show the Uganda incident:\n%.2000s", html)
	}
	// The service's own endpoints answer on the same address.
	resp, err = http.Get(page + "metrics")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %v %v", err, resp)
	}
	resp.Body.Close()

	// Wait for the country's traffic alert on stdout (the page had the
	// event first, through the same dispatcher), then stop.
	var trafficUG *alerting.Event
	for polls = 0; polls < maxPolls && trafficUG == nil; polls++ {
		for l := range strings.SplitSeq(stdout.String(), "\n") {
			var ev alerting.Event
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Status == alerting.Firing &&
				ev.Signal == "traffic_bytes" && ev.Entity == "country:UG" && ev.Detector == "traffic_drop" {
				trafficUG = &ev
			}
		}
		if trafficUG == nil {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if trafficUG == nil {
		t.Fatalf("no traffic alert for Uganda on stdout:\n%.3000s", stdout.String())
	}
	if want := time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC); !trafficUG.Start.Equal(want) {
		t.Errorf("traffic alert starts %v, want %v", trafficUG.Start, want)
	}
	// The traffic alerts reach the page too, with the networks they hit.
	joined, polls := pollIncident(t, page, maxPolls, func(in statuspage.Incident) bool {
		return in.Place == "Uganda" && slices.Contains(in.Networks, "MTN Uganda (AS20294)") && slices.Contains(in.Signals, "traffic_bytes")
	})
	if joined == nil {
		t.Fatalf("no Uganda incident showed MTN Uganda's traffic (%d polls)", polls)
	}
	if joined.ID != uganda.ID {
		t.Logf("the traffic joined incident %s, not %s, the first listed", joined.ID, uganda.ID)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	exited = true
	<-copied
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, rest.String())
	}
	if strings.Contains(rest.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", rest.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "outagewatch.yaml")); err != nil {
		t.Errorf("the demo's config is not in its data dir: %v", err)
	}
}

// pollIncident asks the page for its incidents until one satisfies ok, at
// most maxPolls times, four a second; nil if none did.
func pollIncident(t *testing.T, page string, maxPolls int, ok func(statuspage.Incident) bool) (*statuspage.Incident, int) {
	t.Helper()
	for polls := 1; polls <= maxPolls; polls++ {
		time.Sleep(250 * time.Millisecond)
		resp, err := http.Get(page + "api/v1/incidents")
		if err != nil {
			continue // not serving yet
		}
		var body struct {
			Incidents []statuspage.Incident `json:"incidents"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("incidents: %v", err)
		}
		for i, in := range body.Incidents {
			if ok(in) {
				return &body.Incidents[i], polls
			}
		}
	}
	return nil, maxPolls
}
