package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/service"
	"github.com/outagewatch/outagewatch/statuspage"
)

// demoOptions configure `outagewatch run --demo`.
type demoOptions struct {
	fixture string
	// speed is the multiple of real time the data plays at once the
	// paced part begins.
	speed float64
	// lead is how long before the fixture's first labelled onset the
	// paced part begins; the history before it goes at once.
	lead    time.Duration
	listen  string
	dataDir string // "" is a temporary directory, removed at exit
}

// Defaults of the demo.
const (
	// DemoFixture is the incident the demo plays unless told otherwise:
	// the Uganda shutdown of 2021-01-13, the fixture the README and the
	// service's tests use, with traffic, DNS and BGP all dropping.
	demoFixture = "uganda-2021-01-13"
	// demoSpeed plays ten minutes of data a second: a 5-minute bucket
	// closes every half second, slow enough to see alerts arrive one by
	// one, and the Uganda fixture's seven days after the lead take about
	// a quarter of an hour.
	demoSpeed = 600
	// demoLead starts the paced part two hours of data (12 s at the
	// default speed) before the first labelled onset, so the page shows
	// a quiet network before the first alert.
	demoLead = 2 * time.Hour
)

// runDemo starts an in-process Kafka broker (kfake speaks the real wire
// protocol), plays a bundled fixture into it on an accelerated clock, and
// runs the live service on it, both stages in one process, until ctx
// ends. The outage page and the service's own endpoints share one
// address, printed on stderr.
func runDemo(ctx context.Context, o demoOptions) (err error) {
	log := slog.Default().With("demo", o.fixture)
	if err := (playOptions{speed: o.speed}).check(); err != nil {
		return fmt.Errorf("run --demo: %w", err)
	}
	pl, err := openPlayback(o.fixture)
	if err != nil {
		return err
	}
	if pl.spec == nil {
		return fmt.Errorf("run --demo %s: want a fixture (its map and labels come with it), not a recording: play a recording into a broker with `outagewatch produce`", o.fixture)
	}
	dir := o.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "outagewatch-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}

	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("run --demo: start the in-process broker: %w", err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]

	// The partitions produce would give a real Kafka.
	tr := kafkaio.Transport(nil)
	defer tr.CloseIdleConnections()
	topics := pl.prefixTopics("")
	if err := createTopics(ctx, []string{addr}, tr, (playOptions{topics: topics}).topicNames(), 3); err != nil {
		return err
	}
	cfgFile := filepath.Join(dir, "outagewatch.yaml")
	if err := os.WriteFile(cfgFile, demoConfig(addr, dir, pl), 0o644); err != nil {
		return err
	}
	cfg, err := service.LoadConfig(cfgFile)
	if err != nil {
		return err
	}
	set, err := fixtureRules(pl)
	if err != nil {
		return err
	}

	// The service's endpoints on a loopback port of their own, behind the
	// page's address.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	store := statuspage.NewStore()
	// A demo is watched to its end: keep the incident listed after it is
	// over, as long as the fixture runs.
	store.Recent = pl.spec.End.Sub(pl.spec.Start)
	svc, err := service.NewStaged(cfg, service.Options{Map: pl.spec.Map(), Rules: set, Listener: inner,
		Sinks: []alerting.Sink{store}, Logger: log}, service.StageBoth)
	if err != nil {
		inner.Close()
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		inner.Close()
		return fmt.Errorf("run --demo: listen %s: %w", o.listen, err)
	}
	srv := &http.Server{Handler: demoHandler(store, inner.Addr().String(), "outagewatch demo: "+pl.spec.Name), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	// The line that names the page comes first, before the service logs
	// anything: it is what a newcomer reads.
	po := playOptions{topics: topics, speed: o.speed, fastUntil: firstOnset(pl).Add(-o.lead).UnixNano()}
	fmt.Fprintf(os.Stderr, "outagewatch demo: %s plays into an in-process Kafka at %s; open http://%s/ (alerts also go to stdout; Ctrl-C stops)\n",
		pl.spec.Name, addr, ln.Addr())
	log.Info("demo", "page", "http://"+ln.Addr().String()+"/", "broker", addr, "config", cfgFile,
		"speed", o.speed, "paced_from", time.Unix(0, po.fastUntil).UTC())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	played := make(chan struct{})
	go func() {
		defer close(played)
		w := newProducer([]string{addr}, tr)
		defer w.Close()
		st, err := play(ctx, w, pl.src, po, wallClock{})
		if err != nil && ctx.Err() == nil {
			log.Error("playing the fixture stopped", "err", err)
		}
		st.log(log, pl.spec.Name)
	}()
	select {
	case err = <-done:
		cancel() // the service stopped by itself: stop playing too
	case <-ctx.Done():
		err = <-done
	}
	<-played
	log.Info("demo stopped", "err", err)
	return err
}

// demoConfig is the service config of the demo: the fixture's topics on
// the in-process broker, alerts as JSON lines on stdout.
func demoConfig(addr, dir string, pl *playback) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `outagewatch run --demo`: the live service on an in-process broker.\n")
	fmt.Fprintf(&b, "kafka:\n  brokers: [%q]\n  group_id: outagewatch-demo\n  topics:\n", addr)
	for _, s := range pl.streams {
		fmt.Fprintf(&b, "    - {name: %q, stream: %q, format: %q}\n", s.stream, s.stream, s.format)
	}
	fmt.Fprintf(&b, "data_dir: %q\n", dir)
	if len(pl.spec.LocalASNs) > 0 {
		var asns []string
		for _, a := range pl.spec.LocalASNs {
			asns = append(asns, fmt.Sprint(a))
		}
		fmt.Fprintf(&b, "local_asns: [%s]\n", strings.Join(asns, ", "))
	}
	b.WriteString("sinks:\n  - {name: stdout, type: jsonl, path: \"-\"}\n")
	return []byte(b.String())
}

// fixtureRules are the rules a fixture names, as replay loads them; nil
// (the shipped rules) when it names none.
func fixtureRules(pl *playback) (*rules.Set, error) {
	if pl.spec.Rules == "" {
		return nil, nil
	}
	return rules.Load(filepath.Join(filepath.Dir(pl.spec.File), pl.spec.Rules))
}

// firstOnset is the earliest labelled onset of the fixture, or its start
// when it labels none.
func firstOnset(pl *playback) time.Time {
	t := pl.spec.Start
	for i, e := range pl.spec.Expect {
		if i == 0 || e.Onset.Before(t) {
			t = e.Onset
		}
	}
	return t
}

// demoHandler serves the outage page of store, with the service's own
// endpoints (alerts and events API, metrics, health) passed to it.
func demoHandler(store *statuspage.Store, inner, title string) http.Handler {
	mux := http.NewServeMux()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: inner})
	for _, p := range []string{"/api/v1/alerts", "/api/v1/events", "/api/v1/events/", "/metrics", "/healthz", "/readyz"} {
		mux.Handle(p, proxy)
	}
	mux.Handle("/", statuspage.Handler(store, nil, title))
	return mux
}
