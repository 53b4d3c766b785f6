package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// proc is a real outagewatch process, stopped with SIGTERM when the test
// ends.
type proc struct {
	cmd *exec.Cmd
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return out
}

func buildOutagewatch(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "outagewatch")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), log: &syncBuffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v\n%s", args[0], err, p.log.String())
			}
		case <-time.After(60 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGTERM", args[0])
		}
	})
	return p
}

// The loop closed live with two real processes wired only by their
// configuration files: the Telia fixture produced into a Kafka broker
// (kfake, the real wire protocol), `outagewatch run` reading it, its
// sink with action_rules posting to `outagewatch actions serve` in enforce
// mode, which drives a gobgp speaker over gRPC. The audit log says AS1299
// was shut at ams01, fra01 and lon01 at 08:35 on 2019-06-17 and at 12:15
// on 2019-06-20 event time and restored after each hold; every shutdown
// and restore is an alert event in the actions sink; and the Telia
// sessions are established again at the end.
func TestTeliaLiveTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and replays a week of measurements through Kafka")
	}
	bin := buildOutagewatch(t)
	spec, err := scenario.Load("../../fixtures/telia-2019-06-20.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "quality"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]bool{}
	for _, r := range recs {
		formats[r.Stream+"/"+r.Format] = true
		cl.Produce(context.Background(), &kgo.Record{Topic: "quality", Key: r.Key, Value: r.Value, Timestamp: time.Unix(0, r.Time)},
			func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if len(formats) != 1 || !formats["quality/quality-json"] {
		t.Fatalf("the fixture renders %v, want quality/quality-json only", formats)
	}

	lab := newTeliaLab(t)
	dir := t.TempDir()
	env := []string{"OW_TEST_ACTIONS_SECRET=s3cret"}
	actionsAddr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "actions.yaml"), fmt.Sprintf(`mode: enforce
rules: [transit-packet-loss]
cooldown: 30m
hold: 30m
gobgp: %s
audit: actions.jsonl
serve:
  listen: %s
  secret_env: OW_TEST_ACTIONS_SECRET
  restore_every: 100ms
sinks:
  - {name: page, type: jsonl, path: action-events.jsonl}
sites:
%s`, lab.grpc, actionsAddr, lab.cfgSites))
	serve := startProc(t, bin, env, "actions", "serve", "--config", filepath.Join(dir, "actions.yaml"))
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + actionsAddr + "/api/v1/actions")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 1200 {
			t.Fatalf("actions serve does not answer: %v\n%s", err, serve.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	writeFile(t, filepath.Join(dir, "outagewatch.yaml"), fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [{name: quality, stream: quality, format: quality-json}]
  idle_partition_after: 1s
data_dir: %s/data
local_asns: [64500]
sinks:
  - {name: alerts, type: jsonl, path: alerts.jsonl}
  - name: actions
    type: webhook
    url: "http://%s/api/v1/alerts/webhook"
    secret_env: OW_TEST_ACTIONS_SECRET
    action_rules: [transit-packet-loss]
http:
  listen: %s
`, broker, dir, actionsAddr, freeAddr(t)))
	startProc(t, bin, env, "run", "--config", filepath.Join(dir, "outagewatch.yaml"))

	var want []string
	for _, p := range []struct{ at, op string }{{"06-17T08:35", "shutdown"}, {"06-17T09:25", "loss-resolved"}, {"06-17T09:55", "restore"},
		{"06-20T12:15", "shutdown"}, {"06-20T12:45", "loss-resolved"}, {"06-20T13:15", "restore"}} {
		for _, site := range lab.sites {
			want = append(want, fmt.Sprintf("%s enforce %s AS1299 %s", p.at, p.op, site))
		}
	}
	var got []string
	for i := 0; len(got) < len(want); i++ {
		if i > 2400 {
			t.Fatalf("audit log after waiting:\n%s", strings.Join(got, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
		got = auditLines(t, actionsAddr)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var wantEvs []string
	for _, p := range []struct{ at, status string }{{"06-17T08:35", "firing"}, {"06-17T09:55", "resolved"}, {"06-20T12:15", "firing"}, {"06-20T13:15", "resolved"}} {
		for _, site := range lab.sites {
			e := "transit:1299@" + site
			wantEvs = append(wantEvs, fmt.Sprintf("%s alert transit-shutdown %s %s %s", p.at, p.status, e, alerting.AlertID("transit-shutdown", "packet_loss", e)))
		}
	}
	if evs := actionEvents(t, filepath.Join(dir, "action-events.jsonl"), 12); strings.Join(evs, "\n") != strings.Join(wantEvs, "\n") {
		t.Fatalf("action events:\n%s\nwant:\n%s", strings.Join(evs, "\n"), strings.Join(wantEvs, "\n"))
	}
	waitSessions(t, lab.edge, lab.allUp)
}
