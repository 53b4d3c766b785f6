package actions

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// API serves the actions over HTTP:
//
//	POST /api/v1/alerts/webhook       alert events from outagewatch's webhook sink (signed)
//	GET  /api/v1/actions              the audit log, JSON lines
//	POST /api/v1/actions/{id}/undo    undo a shutdown (bearer token; X-Outagewatch-Who names the operator)
//	GET  /api/v1/capacity?dc=X&need=MS  can X take MS more ms/s of CPU, or which nearest data centers can
type API struct {
	Transits *Transits
	// Secret checks the webhook signature; empty accepts unsigned events
	// (bind to localhost then).
	Secret string
	// Token guards undo; empty disables it.
	Token string
	// Capacity returns the Traffic Manager input and plan in force; nil
	// disables the capacity endpoint.
	Capacity func() (trafficmanager.Input, trafficmanager.State)
}

// Handler returns the routes.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/alerts/webhook", a.webhook)
	mux.HandleFunc("GET /api/v1/actions", a.list)
	mux.HandleFunc("POST /api/v1/actions/{id}/undo", a.undo)
	mux.HandleFunc("GET /api/v1/capacity", a.capacity)
	return mux
}

func (a *API) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if a.Secret != "" {
		// The signature covers the delivery's timestamp: a replayed
		// delivery older than five minutes is refused.
		if err := alerting.Verify(a.Secret, body, r.Header.Get(alerting.HeaderSignature), r.Header.Get(alerting.HeaderTimestamp), time.Now(), 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}
	var ev alerting.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "not an alert event: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := a.Transits.Send(r.Context(), &ev); err != nil {
		// 5xx: the sender's outbox retries, and a transit already shut is
		// left alone on the retry.
		slog.Error("actions: alert event", "id", ev.ID, "err", err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	recs, err := a.Transits.Records()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for i := range recs {
		_ = enc.Encode(&recs[i])
	}
}

func (a *API) undo(w http.ResponseWriter, r *http.Request) {
	if a.Token == "" {
		http.Error(w, "undo over HTTP is disabled: no token configured", http.StatusForbidden)
		return
	}
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) != 1 {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	who := r.Header.Get("X-Outagewatch-Who")
	if who == "" {
		who = "api"
	}
	rec, err := a.Transits.Undo(r.Context(), r.PathValue("id"), who)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&rec)
}

func (a *API) capacity(w http.ResponseWriter, r *http.Request) {
	if a.Capacity == nil {
		http.Error(w, "no Traffic Manager topology configured", http.StatusNotFound)
		return
	}
	dc := r.URL.Query().Get("dc")
	need, err := strconv.ParseFloat(r.URL.Query().Get("need"), 64)
	if dc == "" || err != nil {
		http.Error(w, "want ?dc=NAME&need=MS (CPU ms per second)", http.StatusBadRequest)
		return
	}
	in, st := a.Capacity()
	ans, err := trafficmanager.Capacity(in, st, dc, need)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&ans)
}
