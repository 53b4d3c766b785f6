package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/report"
	"github.com/outagewatch/outagewatch/statuspage"
)

// serveStatus serves the outage page of a finished replay on ln until
// SIGINT or SIGTERM: the replay's incidents, with charts of the recorded
// series, and metrics (nil: none) on /metrics.
func serveStatus(ctx context.Context, ln net.Listener, title string, events []alerting.Event, rec *report.Recorder, metrics http.Handler) error {
	if ctx == nil {
		ctx = context.Background()
	}
	h, store := replayPage(title, events, rec)
	mux := http.NewServeMux()
	mux.Handle("/", h)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	slog.Info("outage page", "url", "http://"+ln.Addr().String()+"/", "incidents", len(store.Incidents()))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// replayPage is the outage page of a finished replay: its alerts and
// outage events, every one listed (a replay is looked at after the fact),
// charted from the recorded series, with links out.
func replayPage(title string, events []alerting.Event, rec *report.Recorder) (http.Handler, *statuspage.Store) {
	store := statuspage.NewStore()
	store.Recent = 100 * 365 * 24 * time.Hour
	for _, ev := range events {
		store.Add(ev)
	}
	var charts statuspage.Charts
	if rec != nil {
		charts = rec
	}
	return statuspage.NewHandler(store, charts, statuspage.Options{Title: "outagewatch replay: " + title, Links: true}), store
}

// fixtureWindows returns the labelled windows of the fixtures among args,
// for the report's charts.
func fixtureWindows(args []string) []report.Window {
	var out []report.Window
	for _, a := range args {
		a = fixtures.Resolve(a)
		if !replay.IsFixture(a) {
			continue
		}
		if spec, err := loadFixture(a); err == nil {
			out = append(out, report.FixtureWindows(spec)...)
		}
	}
	return out
}
