package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/scenario"
)

// The staged tests run real processes: this test binary, re-executed with
// childEnv set, runs the stages (Staged, as `run --stage` does) against a
// kfake broker in the parent, and is killed with SIGKILL.
const childEnv = "OUTAGEWATCH_STAGED_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(stagedChild(spec))
	}
	os.Exit(m.Run())
}

// childSpec is what a child process is told.
type childSpec struct {
	Broker string
	Dir    string
	Stage  string
	Topics []Topic
}

func stagedChild(spec string) int {
	// SIGTERM may come while the child is still starting.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var cs childSpec
	if err := json.Unmarshal([]byte(spec), &cs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := os.MkdirAll(cs.Dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(cs.Dir, "started"), nil, 0o644)
	}
	fx, err := scenario.Load(fixturePath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var set *rules.Set
	if fx.Rules != "" {
		if set, err = rules.Load(filepath.Join(filepath.Dir(fixturePath), fx.Rules)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	cfg := stagedConfig(cs)
	cfg.LocalASNs = fx.LocalASNs
	st, err := NewStaged(cfg, Options{Rules: set, Map: fx.Map(), Logger: quietLog(),
		Outbox: alerting.OutboxConfig{InitialBackoff: 10 * time.Millisecond}}, cs.Stage)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := st.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func stagedConfig(cs childSpec) *Config {
	c := testConfig(cs.Broker, cs.Dir, cs.Topics...)
	c.Kafka.GroupID = "outagewatch-staged"
	c.Kafka.IdleAfter = 2 * time.Second
	c.Kafka.PollInterval = 200 * time.Millisecond
	c.Kafka.SessionTimeout = 2 * time.Second
	c.Kafka.InternalPartitions = 4
	c.CheckpointInterval = time.Second
	if err := c.validate(); err != nil {
		panic(err)
	}
	return c
}

// stagedFixture is the Uganda fixture from two days before the shutdown
// (what a multi-process run gets through in reasonable time) and what one
// replay of exactly those records prints.
type stagedFixture struct {
	recs []*ingest.Record
	want map[string]string // by delivery key
}

var (
	sfOnce sync.Once
	sf     stagedFixture
	sfErr  error
)

func loadStagedFixture(t *testing.T) *stagedFixture {
	t.Helper()
	f := loadFixture(t)
	sfOnce.Do(func() {
		for _, r := range f.recs {
			if r.Time >= raceFrom {
				sf.recs = append(sf.recs, r)
			}
		}
		sf.want, _, sfErr = replayLines(f, sf.recs)
	})
	if sfErr != nil {
		t.Fatal(sfErr)
	}
	if len(sf.want) == 0 {
		t.Fatal("the replay raised nothing")
	}
	return &sf
}

// replayLines replays copies of recs (replay stamps what it reads) through
// one pipeline with the fixture's rules and map, and returns its alert and
// event lines by delivery key, and the pipeline as the replay left it.
func replayLines(f *fixture, recs []*ingest.Record) (map[string]string, *pipeline.Pipeline, error) {
	var out bytes.Buffer
	sink := alerting.NewJSONL("replay", &out)
	send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
	p, err := pipeline.New(pipeline.Config{Rules: f.set, Map: f.m, LocalASNs: f.local, Logger: quietLog(), Events: send}, send)
	if err != nil {
		return nil, nil, err
	}
	cp := make([]*ingest.Record, len(recs))
	for i, r := range recs {
		c := *r
		cp[i] = &c
	}
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("fixture", cp)}, nil); err != nil {
		return nil, nil, err
	}
	want, err := byDeliveryKey(lines(out.String()))
	return want, p, err
}

// byDeliveryKey de-duplicates alert and event lines by their delivery
// key, as a receiver does (delivery is at least once); one key with two
// different lines is an error.
// sameByKey fails t unless got holds exactly the lines of want, each under
// its delivery key: none missing or different, none extra.
func sameByKey(t *testing.T, want, got map[string]string) {
	t.Helper()
	for k, l := range want {
		if got[k] != l {
			t.Errorf("line differs from the reference:\nwant %s\n got %s", l, got[k])
		}
	}
	for k, l := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("extra line: %s", l)
		}
	}
}

func byDeliveryKey(ls []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range ls {
		var v struct {
			Key string `json:"delivery_key"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Key == "" {
			return nil, fmt.Errorf("line without a delivery key: %.200s", l)
		}
		if old, ok := out[v.Key]; ok && old != l {
			return nil, fmt.Errorf("delivery key %s on two different lines:\n%s\n%s", v.Key, old, l)
		}
		out[v.Key] = l
	}
	return out, nil
}

// child is one process running stages.
type child struct {
	spec childSpec
	cmd  *exec.Cmd
	// log is read while the child writes it (waitLogged).
	log *syncBuffer
}

func startChild(t *testing.T, cs childSpec) *child {
	t.Helper()
	_ = os.Remove(filepath.Join(cs.Dir, "started"))
	b, _ := json.Marshal(cs)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	log := &syncBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &child{spec: cs, cmd: cmd, log: log}
}

// waitLogged waits until the child has logged each of lines n times. A
// test of what a restarted instance does on start waits for it so: the
// instance killed before may have delivered every alert already, and the
// restarted one would otherwise be stopped before it restored anything.
func (c *child) waitLogged(t *testing.T, n int, lines ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s to log %q", c.spec.Dir, lines), waitLong, func() bool {
		s := c.log.String()
		for _, l := range lines {
			if strings.Count(s, l) < n {
				return false
			}
		}
		return true
	})
}

// kill is SIGKILL: no checkpoint, no commit, no flush.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

func (c *child) stop(t *testing.T) {
	t.Helper()
	// A child started a moment ago may not handle SIGTERM yet.
	waitFor(t, c.spec.Dir+" started", waitLong, func() bool {
		_, err := os.Stat(filepath.Join(c.spec.Dir, "started"))
		return err == nil
	})
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s stage %s: %v\n%s", c.spec.Dir, c.spec.Stage, err, tail(c.log.String()))
		}
	case <-time.After(60 * time.Second):
		c.kill()
		t.Errorf("%s did not stop", c.spec.Dir)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// stagedRun is a broker with the fixture on it and the processes run
// against it.
type stagedRun struct {
	t      *testing.T
	f      *stagedFixture
	addr   string
	topics []Topic
	dirs   []string
}

func newStagedRun(t *testing.T) *stagedRun {
	if testing.Short() {
		t.Skip("runs processes through days of the Uganda fixture")
	}
	if raceEnabled {
		// The work is in the child processes, which the detector would
		// slow tenfold past the test timeout.
		t.Skip("processes under the race detector take too long")
	}
	f := loadStagedFixture(t)
	fx := loadFixture(t)
	c := startBroker(t, 0, "", fx.topicNames()...)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, fx.topics, f.recs)
	return &stagedRun{t: t, f: f, addr: addr, topics: fx.topics}
}

func (r *stagedRun) spec(i int, stage string) childSpec {
	dir := filepath.Join(r.t.TempDir(), fmt.Sprintf("instance-%d", i))
	r.dirs = append(r.dirs, dir)
	return childSpec{Broker: r.addr, Dir: dir, Stage: stage, Topics: r.topics}
}

// got reads every instance's alerts, de-duplicated by delivery key.
func (r *stagedRun) got() map[string]string {
	var all []string
	for _, d := range r.dirs {
		all = append(all, readLines(r.t, filepath.Join(d, "alerts.jsonl"))...)
	}
	m, err := byDeliveryKey(all)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// waitAll waits until every alert of the replay has been delivered
// somewhere, or the wait is over.
func (r *stagedRun) waitAll(children []*child) {
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		g := r.got()
		n := 0
		for k := range r.f.want {
			if _, ok := g[k]; ok {
				n++
			}
		}
		if n == len(r.f.want) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range children {
		r.t.Logf("%s stage %s log:\n%s", c.spec.Dir, c.spec.Stage, tail(c.log.String()))
	}
}

// check compares the delivered alert and event lines with the replay's:
// none lost, none extra, each byte for byte (after de-duplication by
// delivery key).
func (r *stagedRun) check() {
	got := r.got()
	var missing, extra []string
	for k, l := range r.f.want {
		if got[k] != l {
			missing = append(missing, l)
		}
	}
	for k, l := range got {
		if r.f.want[k] != l {
			extra = append(extra, l)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	r.t.Logf("replay: %d alert and event lines; delivered: %d distinct", len(r.f.want), len(got))
	if len(missing)+len(extra) > 0 {
		r.t.Errorf("%d of %d alert and event lines lost, %d extra", len(missing), len(r.f.want), len(extra))
		for _, l := range missing {
			r.t.Logf("missing: %.400s", l)
		}
		for _, l := range extra {
			r.t.Logf("extra: %.400s", l)
		}
	}
}

// (b) Two instances from the start, each running both stages, deliver the
// single replay's alerts and events, country alerts included.
func TestStagedTwoInstances(t *testing.T) {
	r := newStagedRun(t)
	cs := []*child{startChild(t, r.spec(0, StageBoth)), startChild(t, r.spec(1, StageBoth))}
	r.waitAll(cs)
	for _, c := range cs {
		c.stop(t)
	}
	r.check()
	country := 0
	for _, l := range r.f.want {
		if strings.Contains(l, `"entity":"country:UG"`) {
			country++
		}
	}
	if country == 0 {
		t.Fatal("the replay has no country alert to compare")
	}
}

// (a) Three instances in one group, one of them SIGKILLed again and again
// while it works and restarted on its data dir: the alerts of one replay,
// none lost, none extra.
func TestStagedKillOneOfThree(t *testing.T) {
	r := newStagedRun(t)
	cs := []*child{startChild(t, r.spec(0, StageBoth)), startChild(t, r.spec(1, StageBoth)), startChild(t, r.spec(2, StageBoth))}
	for i := range 4 {
		time.Sleep(time.Second + time.Duration(i)*500*time.Millisecond)
		cs[0].kill()
		time.Sleep(500 * time.Millisecond)
		cs[0] = startChild(t, cs[0].spec)
	}
	r.waitAll(cs)
	for _, c := range cs {
		c.stop(t)
	}
	r.check()
}

// (c) One instance in a tight crash loop: killed three times within
// seconds of each start, its dead members still in the group when it
// comes back; then left to finish.
func TestStagedCrashLoop(t *testing.T) {
	r := newStagedRun(t)
	spec := r.spec(0, StageBoth)
	for i := range 3 {
		c := startChild(t, spec)
		time.Sleep(2*time.Second + time.Duration(i)*time.Second)
		c.kill()
	}
	c := startChild(t, spec)
	r.waitAll([]*child{c})
	c.stop(t)
	r.check()
	// The routing table went to the data dir, for the next start.
	if _, err := os.Stat(filepath.Join(spec.Dir, "stage1-bgp.checkpoint")); err != nil {
		t.Error(err)
	}
}

// (d) Stage one and stage two as separate processes (two of each) give
// what both stages in one process give: the replay's alerts.
func TestStagedSeparateStages(t *testing.T) {
	r := newStagedRun(t)
	cs := []*child{startChild(t, r.spec(0, StageOne)), startChild(t, r.spec(1, StageTwo)),
		startChild(t, r.spec(2, StageOne)), startChild(t, r.spec(3, StageTwo))}
	r.waitAll(cs)
	for _, c := range cs {
		c.stop(t)
	}
	r.check()
}

// A staged process answers the alert API for the partitions it holds:
// fed the Uganda fixture up to a day into the shutdown, once it has
// delivered every line a replay of the same records gives, the alerts it
// lists as active are exactly those the replay leaves firing, its outage
// page lists the replay's outage events, and the silence and checkpoint
// APIs work on it.
func TestStagedAlertAPI(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs days of the Uganda fixture through both stages")
	}
	f := loadFixture(t)
	cut := time.Date(2021, 1, 14, 17, 0, 0, 0, time.UTC).UnixNano()
	var recs []*ingest.Record
	for _, r := range loadStagedFixture(t).recs {
		if r.Time < cut {
			recs = append(recs, r)
		}
	}
	wantLines, p, err := replayLines(f, recs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range p.ActiveAlerts() {
		want = append(want, a.ID)
	}
	slices.Sort(want)
	if len(want) == 0 {
		t.Fatal("nothing firing at the cut")
	}

	c := startBroker(t, 0, "", f.topicNames()...)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, f.topics, recs)
	dir := t.TempDir()
	cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
	cfg.LocalASNs = f.local
	t.Setenv("OUTAGEWATCH_TEST_TOKEN", "tok")
	cfg.HTTP.TokenEnv = "OUTAGEWATCH_TEST_TOKEN"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStaged(cfg, Options{Rules: f.set, Map: f.m, Logger: quietLog(), Listener: ln}, StageBoth)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	for deadline := time.Now().Add(waitLong); ; time.Sleep(200 * time.Millisecond) {
		got, err := byDeliveryKey(readLines(t, filepath.Join(dir, "alerts.jsonl")))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for k := range wantLines {
			if _, ok := got[k]; ok {
				n++
			}
		}
		if n == len(wantLines) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d lines delivered", n, len(wantLines))
		}
	}
	waitActive(t, "http://"+ln.Addr().String(), want)
	checkStagedPage(t, "http://"+ln.Addr().String(), wantLines)
}
