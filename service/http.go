package service

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/silence"
)

func (s *Service) listen() error {
	ln := s.opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.HTTP.Listen); err != nil {
			return fmt.Errorf("http listen %s: %w", s.cfg.HTTP.Listen, err)
		}
	}
	s.ln.Store(&ln)
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error("http server", "err", err)
		}
	}()
	s.log.Info("operations endpoints", "addr", ln.Addr().String())
	return nil
}

// Handler serves the operations endpoints:
//
//	GET  /metrics              Prometheus metrics
//	GET  /healthz              200 while the main loop is alive
//	GET  /readyz               200 when consuming, 503 with the reason otherwise
//	GET  /api/v1/alerts        the alerts firing now, as JSON (each names its
//	                           outage event, or why it is muted)
//	GET  /api/v1/events        the outage events open now
//	GET  /api/v1/events/{id}   one event, open or among the last resolved
//	GET  /api/v1/silences      silences and maintenance windows
//	POST /api/v1/silences      add one (bearer token required)
//	DELETE /api/v1/silences/{id}  remove one (bearer token required)
//	POST /api/v1/checkpoint    write a checkpoint now (bearer token required)
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		beat := s.loopBeat.Load()
		if beat != 0 && time.Since(time.Unix(0, beat)) > time.Minute {
			http.Error(w, "main loop stalled", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, why := s.Ready()
		if !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, why)
	})
	mux.HandleFunc("GET /api/v1/alerts", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		// An empty list, not null, and no watermark until there is one.
		body := struct {
			Alerts    []alerting.Event `json:"alerts"`
			Watermark *time.Time       `json:"watermark"`
		}{Alerts: s.p.ActiveAlerts()}
		if body.Alerts == nil {
			body.Alerts = []alerting.Event{}
		}
		if wm := s.p.Stats().Watermark; wm > 0 {
			t := time.Unix(0, wm).UTC()
			body.Watermark = &t
		}
		_ = enc.Encode(body)
	})
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		evs := s.p.ActiveEvents()
		if evs == nil {
			evs = []alerting.Event{}
		}
		writeJSON(w, http.StatusOK, struct {
			Events []alerting.Event `json:"events"`
		}{evs})
	})
	mux.HandleFunc("GET /api/v1/events/{id}", func(w http.ResponseWriter, r *http.Request) {
		ev, ok := s.p.Event(r.PathValue("id"))
		if !ok {
			http.Error(w, "no such event (open, or among the last 200 resolved)", http.StatusNotFound)
			return
		}
		writeJSON(w, http.StatusOK, ev)
	})
	silenceRoutes(mux, s.silences, s.cfg, s.log)
	mux.HandleFunc("POST /api/v1/checkpoint", s.authorized(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Checkpoint(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "checkpoint written")
	}))
	mux.Handle("/", s.statusPage()) // the outage page: /, /incident/{id}, /api/v1/incidents
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// silenceAPI is a set of silences the API reads and writes: one
// instance's file (silence.Store) or a deployment's topic (sharedSilences).
type silenceAPI interface {
	List() []silence.Silence
	Add(silence.Silence) (silence.Silence, error)
	Delete(id string) error
}

// silenceRoutes serves the silence API on mux: list, add and delete, the
// last two behind the API token.
func silenceRoutes(mux *http.ServeMux, store silenceAPI, cfg *Config, log *slog.Logger) {
	mux.HandleFunc("GET /api/v1/silences", func(w http.ResponseWriter, r *http.Request) {
		l := store.List()
		if l == nil {
			l = []silence.Silence{}
		}
		writeJSON(w, http.StatusOK, struct {
			Silences []silence.Silence `json:"silences"`
		}{l})
	})
	mux.HandleFunc("POST /api/v1/silences", authorized(cfg, func(w http.ResponseWriter, r *http.Request) {
		var in silence.Silence
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			http.Error(w, "silence: "+err.Error(), http.StatusBadRequest)
			return
		}
		out, err := store.Add(in)
		if err != nil {
			http.Error(w, "silence: "+err.Error(), http.StatusBadRequest)
			return
		}
		log.Info("silence added", "id", out.ID, "author", out.Author, "entity", out.Entity, "start", out.Start, "end", out.End, "comment", out.Comment)
		writeJSON(w, http.StatusCreated, out)
	}))
	mux.HandleFunc("DELETE /api/v1/silences/{id}", authorized(cfg, func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		switch err := store.Delete(id); {
		case errors.Is(err, silence.ErrNotFound):
			http.Error(w, err.Error(), http.StatusNotFound)
		case errors.Is(err, silence.ErrFromConfig):
			http.Error(w, err.Error(), http.StatusConflict)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			log.Info("silence deleted", "id", id)
			w.WriteHeader(http.StatusNoContent)
		}
	}))
}

func (s *Service) authorized(h http.HandlerFunc) http.HandlerFunc { return authorized(s.cfg, h) }

// authorized guards state-changing endpoints with the bearer token named by
// http.token_env; with no token configured they are refused outright.
func authorized(cfg *Config, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want := ""
		if cfg.HTTP.TokenEnv != "" {
			want = os.Getenv(cfg.HTTP.TokenEnv)
		}
		if want == "" {
			http.Error(w, "disabled: no API token configured (http.token_env)", http.StatusForbidden)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}
