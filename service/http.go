package service

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/outagewatch/outagewatch/silence"
)

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
