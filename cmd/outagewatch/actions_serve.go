package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/decider"
	"github.com/outagewatch/outagewatch/internal/hangup"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/planhook"
	"github.com/outagewatch/outagewatch/service"
	"github.com/outagewatch/outagewatch/tmfeed"
	"github.com/outagewatch/outagewatch/tmmap"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// checkServe checks what the flags may have changed after the file was
// validated.
func checkServe(cfg *actions.Config) error {
	tm := cfg.TrafficManager
	switch {
	case tm.Mode != actions.ModeDryRun && tm.Mode != actions.ModeEnforce:
		return fmt.Errorf("Traffic Manager mode %q: want dry-run or enforce", tm.Mode)
	case tm.Topic != "" && tm.Topology == "":
		return errors.New("a Traffic Manager topic needs a topology (traffic_manager.topology or --topology)")
	case (tm.Topic != "" || tm.PlanTopic != "" || cfg.Serve.DeciderTopic != "") && len(cfg.Kafka.Brokers) == 0:
		return errors.New("the decider and Traffic Manager topics need Kafka brokers (kafka.brokers or --brokers)")
	}
	return nil
}

// preflight makes the checks serve makes before it binds or dials, which
// `actions check` makes too, and loads the files serve will need, so a
// mistake in any of them stops serve before it starts anything.
func preflight(cfg *actions.Config) (*ready, error) {
	if err := checkServe(cfg); err != nil {
		return nil, err
	}
	r := &ready{secret: os.Getenv(cfg.Serve.SecretEnv)}
	if r.secret == "" && (cfg.Mode == actions.ModeEnforce || cfg.TrafficManager.Mode == actions.ModeEnforce && cfg.TrafficManager.Webhook != "") {
		return nil, fmt.Errorf("actions serve: enforce mode needs the webhook secret: environment variable %s (serve.secret_env) is empty", cfg.Serve.SecretEnv)
	}
	var err error
	if r.dialer, err = kafkaDialer(cfg); err != nil {
		return nil, err
	}
	if cfg.RulesFile != "" {
		if r.ruleModes, err = ruleModes(cfg.RulesFile); err != nil {
			return nil, err
		}
	}
	if tp := cfg.TrafficManager.Topology; tp != "" {
		if r.topology, err = trafficmanager.LoadScenario(tp); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ready is what preflight found and loaded.
type ready struct {
	secret    string        // "" when none is set, which refuses every post
	dialer    *kafka.Dialer // with the TLS and SASL settings
	ruleModes map[string]string
	topology  *trafficmanager.Scenario // nil without a Traffic Manager
}

// serveActions runs `actions serve` on cfg until ctx ends or a signal.
func serveActions(ctx context.Context, cfg *actions.Config) error {
	pre, err := preflight(cfg)
	if err != nil {
		return err
	}
	secret, dialer := pre.secret, pre.dialer
	if secret == "" {
		slog.Warn("actions serve: no webhook secret: every alert event posted is refused", "secret_env", cfg.Serve.SecretEnv)
	}
	pager, err := actions.NewPager(cfg)
	if err != nil {
		return err
	}
	defer pager.Close()
	pager.Start()
	tr, closeAll, err := newTransits(cfg, pager.Emit)
	if err != nil {
		return err
	}
	defer closeAll()
	tr.RuleModes = pre.ruleModes
	watchRuleModes(ctx, cfg.RulesFile, tr)
	reg := prometheus.NewRegistry()
	reg.MustRegister(service.BuildInfo())
	tr.Counter = actions.NewCounter(reg)
	pager.Register(reg)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var owned func() int
	if cfg.Serve.DeciderTopic != "" {
		d, err := decider.Start(ctx, decider.Config{Brokers: cfg.Kafka.Brokers, Topic: cfg.Serve.DeciderTopic, GroupID: "outagewatch-actions", Dialer: dialer})
		if err != nil {
			return err
		}
		defer d.Close()
		tr.Owns = d.Owns
		owned = func() int { _, ps := d.Owned(); return len(ps) }
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "outagewatch_actions_decider_partitions",
			Help: "Partitions of the decider topic this instance holds: it acts for the sites that hash to them."},
			func() float64 { _, ps := d.Owned(); return float64(len(ps)) }))
	}
	api := &actions.API{Transits: tr, Secret: secret, MaxSkew: cfg.Serve.MaxSkew, Token: os.Getenv(cfg.Serve.TokenEnv),
		Refused: actions.NewRefusedCounter(reg)}
	if pre.topology != nil {
		closeTM, err := startTM(ctx, cfg, pre, reg, api)
		if err != nil {
			return err
		}
		defer closeTM()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := notReady(secret, owned); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.Handle("/api/", api.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if api.Capacity != nil {
		mux.Handle("GET /tm/map/", http.StripPrefix("/tm/map", tmmap.Handler("outagewatch", api.Capacity)))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	l, err := net.Listen("tcp", cfg.Serve.Listen)
	if err != nil {
		return fmt.Errorf("actions serve: %w", err)
	}
	go func() {
		tick := time.NewTicker(cfg.Serve.RestoreEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = srv.Shutdown(shut)
				cancel()
				return
			case now := <-tick.C:
				if err := tr.Advance(ctx, now.UTC()); err != nil {
					slog.Error("actions: restore", "err", err)
				}
			}
		}
	}()
	slog.Info("actions: listening", "addr", l.Addr().String(), "mode", cfg.Mode, "sites", len(cfg.Sites), "sinks", len(cfg.Sinks))
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// watchRuleModes reads the action modes of the rules at path again on
// SIGHUP, the signal on which `run` reloads the same rules: a rule whose
// actions went from dry-run to enforce, or off, acts so from the next
// alert. Rules that do not load are logged, and the modes in force stay;
// without rules (path "") there is nothing to read, but SIGHUP still does
// not end the process. It stops with ctx.
func watchRuleModes(ctx context.Context, path string, tr *actions.Transits) {
	hangup.Notify(ctx, func() {
		if path == "" {
			slog.Info("actions: SIGHUP: no rules file to read again")
			return
		}
		modes, err := ruleModes(path)
		if err != nil {
			slog.Error("actions: rules not reloaded; the action modes in force stay", "rules", path, "err", err)
			return
		}
		tr.SetRuleModes(modes)
		slog.Info("actions: rules reloaded", "rules", path, "count", len(modes))
	})
}

// notReady says why actions serve cannot act on what it is sent, or "":
// without a secret every post is refused; with a decider, an instance that
// holds no partition acts for no site.
func notReady(secret string, owned func() int) string {
	switch {
	case secret == "":
		return "no webhook secret: every alert event posted is refused"
	case owned != nil && owned() == 0:
		return "the decider holds no partition: this instance acts for no site"
	}
	return ""
}

// startTM runs the Traffic Manager on the topology: the capacity endpoint
// answers from its start, and with a topic it plans live.
func startTM(ctx context.Context, cfg *actions.Config, pre *ready, reg *prometheus.Registry, api *actions.API) (func(), error) {
	tm, sc := cfg.TrafficManager, pre.topology
	start, _ := sc.Inputs()
	planned := trafficmanager.Tick(start, trafficmanager.State{}).State
	api.Capacity = func() (trafficmanager.Input, trafficmanager.State) { return start, planned }
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if tm.Topic == "" {
		return closeAll, nil
	}
	d := tmDriver(sc, tm.Mode, planhook.NewMetrics(reg))
	if tm.Webhook != "" {
		wh, err := planhook.NewWebhook(tm.Webhook, pre.secret)
		if err != nil {
			return nil, err
		}
		d.Publishers = append(d.Publishers, wh)
	}
	if tm.PlanTopic != "" {
		tp := kafkaio.Transport(pre.dialer)
		kp, err := planhook.NewKafka(cfg.Kafka.Brokers, tm.PlanTopic, tp)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { kp.Close(); tp.CloseIdleConnections() })
		d.Publishers = append(d.Publishers, kp)
	}
	if len(tm.Anycast) > 0 {
		a, closeAny, err := anycastFromFlags(tm.Anycast, cfg.GoBGP)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, closeAny)
		if tm.Mode == actions.ModeEnforce {
			if err := a.Start(ctx); err != nil {
				closeAll()
				return nil, err
			}
		}
		d.Publishers = append(d.Publishers, a)
	}
	feed := tmfeed.New(sc)
	if tm.Learn {
		feed.Learn = &trafficmanager.LearnConfig{}
	}
	live := tmfeed.NewLive(feed, func(ctx context.Context, tk *tmfeed.Tick) (trafficmanager.State, error) {
		m, err := d.Tick(ctx, tk.At, tk.Input)
		if m != nil && err == nil {
			slog.Info("tm: plan", "seq", m.Seq, "mode", m.Mode, "changes", len(m.Changes), "notes", m.Notes)
		}
		return d.State(), err
	})
	api.Capacity = live.Capacity
	r := kafkaio.GroupReader(cfg.Kafka.Brokers, tm.Topic, "outagewatch-tm", pre.dialer)
	closers = append(closers, func() { r.Close() })
	go func() {
		if err := live.Run(ctx, r); err != nil {
			slog.Error("tm: stopped", "err", err)
		}
	}()
	return closeAll, nil
}
