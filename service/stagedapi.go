package service

import (
	"bytes"
	"context"
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
//	POST /api/v1/checkpoint    checkpoint every stage of the deployment now (bearer token required)
//	GET  /, /incident/{id}, /api/v1/incidents  the outage page
func (s *Staged) apiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/checkpoint", authorized(s.cfg, func(w http.ResponseWriter, r *http.Request) {
		wait := DefaultCheckpointWait
		if v := r.URL.Query().Get("wait"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d > maxCheckpointWait {
				http.Error(w, fmt.Sprintf("wait %q: want a duration above 0 and up to %s", v, maxCheckpointWait), http.StatusBadRequest)
				return
			}
			wait = d
		}
		res, err := s.CheckpointDeployment(r.Context(), wait)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case len(res.Missing) > 0 || res.oneAnswers < res.StageOneInstances:
			// Not every partition or instance answered for in time:
			// which ones is the answer.
			writeJSON(w, http.StatusGatewayTimeout, res)
		case !res.Complete:
			writeJSON(w, http.StatusInternalServerError, res)
		default:
			writeJSON(w, http.StatusOK, res)
		}
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

// Checkpoint writes a checkpoint of each stage run here now, and only
// here: stage two's snapshots to the changelog with their commits, stage
// one's routing table to the data dir. The API checkpoints the whole
// deployment (CheckpointDeployment).
func (s *Staged) Checkpoint(ctx context.Context) error {
	return s.checkpointHere(ctx).err
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
