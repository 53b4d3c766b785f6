package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/statuspage"
)

// apiRoutes adds, beside the alert API, the silence API and the outage
// page (where stage two runs), and the manual checkpoint.
//
//	GET  /api/v1/silences      silences and maintenance windows
//	POST /api/v1/silences      add one (bearer token required)
//	DELETE /api/v1/silences/{id}  remove one (bearer token required)
//	POST /api/v1/checkpoint    checkpoint every stage run here now (bearer token required)
//	GET  /, /incident/{id}, /api/v1/incidents  the outage page
func (s *Staged) apiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/checkpoint", authorized(s.cfg, func(w http.ResponseWriter, r *http.Request) {
		if err := s.Checkpoint(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "checkpoint written")
	}))
	if !s.two {
		return
	}
	silenceRoutes(mux, s.mute, s.cfg, s.log)
	s.page.Active = s.view.ActiveAlerts
	// Charts are drawn from the observed values kept here
	// (http.chart_history), or else from the evidence each alert carries.
	var charts statuspage.Charts
	if s.charts != nil {
		charts = s.charts
	}
	mux.Handle("/", s.notLiveBanner(statuspage.NewHandler(stagedSource{s.page, s}, charts,
		statuspage.Options{Title: "outagewatch", Links: s.cfg.HTTP.Links()})))
}

// notLiveBanner puts, at the top of the outage page, why the service is
// not live when it is not ready (brokers gone, partitions not restored or
// held by stalled sources) and the data time it really has, so the page
// of a blind instance does not read as "no outage". Every answer of the
// page's handler, JSON too, carries the reason in a header.
func (s *Staged) notLiveBanner(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, why := s.Ready()
		if ok {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Outagewatch-Not-Live", why)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			data := "no data yet"
			if wm := s.dataTime(); !wm.IsZero() {
				data = "data up to " + wm.Format("2006-01-02 15:04 MST")
			}
			banner := `<p id="not-live" role="alert" style="background:#b00020;color:#fff;padding:.6em 1em;margin:0">` +
				`Not live: ` + html.EscapeString(why) + `. The page shows ` + data + `.</p>`
			if i := bytes.Index(body, []byte("<body>")); i >= 0 {
				i += len("<body>")
				body = append(append(body[:i:i], banner...), body[i:]...)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// dataTime is the least watermark of the stage-two partitions held here;
// zero before any bucket closed.
func (s *Staged) dataTime() time.Time {
	var wm int64
	for _, p := range s.status.held() {
		if w := p.Stats().Watermark; w > 0 && (wm == 0 || w < wm) {
			wm = w
		}
	}
	if wm == 0 {
		return time.Time{}
	}
	return time.Unix(0, wm).UTC()
}

// Checkpoint writes a checkpoint of each stage run here now: stage two's
// snapshots to the changelog with their commits, stage one's routing
// table to the data dir.
func (s *Staged) Checkpoint(ctx context.Context) error {
	var errs []error
	for _, ch := range s.checkpointers() {
		reply := make(chan error, 1)
		select {
		case ch <- reply:
		case <-ctx.Done():
			return fmt.Errorf("checkpoint: the stage is not running yet: %w", ctx.Err())
		}
		select {
		case err := <-reply:
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

func (s *Staged) checkpointers() []chan chan error {
	var out []chan chan error
	if s.one {
		out = append(out, s.cp1)
	}
	if s.two {
		out = append(out, s.cp2)
	}
	return out
}

// stagedSource judges durations on the outage page at the least watermark
// of the stage-two partitions held here: the time of the data, not the
// wall clock.
type stagedSource struct {
	*statuspage.Store
	s *Staged
}

func (l stagedSource) Now() time.Time {
	if t := l.s.dataTime(); !t.IsZero() {
		return t
	}
	return l.Store.Now()
}
