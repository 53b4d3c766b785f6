package actions

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	// Secret checks the webhook signature. Empty refuses every alert
	// event: an unsigned post would let anyone who reaches the port plan
	// (and page about) shutdowns.
	Secret string
	// MaxSkew is how far a post's signed timestamp may be from Now;
	// zero is DefaultMaxSkew.
	MaxSkew time.Duration
	// Now is the clock signatures are checked against; default time.Now.
	Now func() time.Time
	// Refused, if set, counts refused posts by reason (unsigned, stale,
	// bad-signature, replayed, no-secret).
	Refused *prometheus.CounterVec
	// Token guards undo; empty disables it.
	Token string
	// Capacity returns the Traffic Manager input and plan in force; nil
	// disables the capacity endpoint.
	Capacity func() (trafficmanager.Input, trafficmanager.State)

	mu sync.Mutex
	// seen holds the signatures of the deliveries acted on while their
	// timestamp is still within MaxSkew, with the time each stops being
	// acceptable anyway: a delivery posted again in that window is a
	// replay. The sender signs every retry anew (and one that failed here
	// is forgotten), so a genuine retry is never one.
	seen map[string]time.Time
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
	if code, reason, msg := a.authenticate(r, body); code != 0 {
		if a.Refused != nil {
			a.Refused.WithLabelValues(reason).Inc()
		}
		slog.Warn("actions: alert event refused", "reason", reason, "remote", r.RemoteAddr, "detail", msg)
		http.Error(w, msg, code)
		return
	}
	var ev alerting.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "not an alert event: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := a.Transits.Send(r.Context(), &ev); err != nil {
		// 5xx: the sender's outbox retries, and a transit already shut is
		// left alone on the retry. The retry may come within the same
		// second, so with the same signature: forget this one.
		a.mu.Lock()
		delete(a.seen, r.Header.Get(alerting.HeaderSignature))
		a.mu.Unlock()
		slog.Error("actions: alert event", "id", ev.ID, "err", err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// authenticate checks a post's signature and timestamp, and that it was not
// accepted before; it returns 0 for a post to act on, else the status, a
// reason label and the message.
func (a *API) authenticate(r *http.Request, body []byte) (int, string, string) {
	if a.Secret == "" {
		return http.StatusForbidden, "no-secret", "no webhook secret configured: alert events are refused (set the variable serve.secret_env names)"
	}
	sig, ts := r.Header.Get(alerting.HeaderSignature), r.Header.Get(alerting.HeaderTimestamp)
	if sig == "" || ts == "" {
		return http.StatusUnauthorized, "unsigned", "unsigned alert event: " + alerting.HeaderSignature + " and " + alerting.HeaderTimestamp + " are required"
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	skew := a.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	at := now()
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return http.StatusUnauthorized, "bad-signature", "bad timestamp " + strconv.Quote(ts)
	}
	if d := at.Sub(time.Unix(sec, 0)); d > skew || d < -skew {
		return http.StatusUnauthorized, "stale", fmt.Sprintf("stale alert event: signed timestamp %s is %s from this host's clock, more than %s", ts, d.Round(time.Second), skew)
	}
	if err := alerting.Verify(a.Secret, body, sig, ts, at, skew); err != nil {
		return http.StatusUnauthorized, "bad-signature", "bad signature"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for s, until := range a.seen {
		if at.After(until) {
			delete(a.seen, s)
		}
	}
	if _, dup := a.seen[sig]; dup {
		return http.StatusConflict, "replayed", "replayed alert event: this signed delivery was already accepted"
	}
	if a.seen == nil {
		a.seen = map[string]time.Time{}
	}
	a.seen[sig] = time.Unix(sec, 0).Add(skew)
	return 0, "", ""
}

// NewRefusedCounter returns the counter of refused posts, registered with
// reg.
func NewRefusedCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_actions_webhook_refused_total",
		Help: "Alert events posted to actions serve and refused, by reason (unsigned, stale, bad-signature, replayed, no-secret)."}, []string{"reason"})
	for _, r := range []string{"unsigned", "stale", "bad-signature", "replayed", "no-secret"} {
		c.WithLabelValues(r)
	}
	reg.MustRegister(c)
	return c
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
