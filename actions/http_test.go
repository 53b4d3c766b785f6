package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

func TestAPI(t *testing.T) {
	cfg, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransits(cfg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start, _ := sc.Inputs()
	api := &API{Transits: tr, Secret: "s3cret", Token: "tok",
		Capacity: func() (trafficmanager.Input, trafficmanager.State) { return start, trafficmanager.State{} }}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()

	do := func(method, path string, body []byte, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ev := `{"id":"d07c","status":"firing","rule":"transit-packet-loss","detector":"packet_loss","signal":"packet_loss","entity":"transit:1299","at":"2019-06-20T12:15:00Z","start":"2019-06-20T12:10:00Z","summary":"loss","details":{"sites":["ams01"]}}`
	if code, _ := do("POST", "/api/v1/alerts/webhook", []byte(ev), map[string]string{alerting.HeaderSignature: "sha256=00"}); code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", code)
	}
	if code, b := do("POST", "/api/v1/alerts/webhook", []byte(ev), signed("s3cret", ev)); code != http.StatusNoContent {
		t.Fatalf("webhook: %d %s", code, b)
	}
	code, b := do("GET", "/api/v1/actions", nil, nil)
	var rec Record
	if code != 200 || json.Unmarshal([]byte(strings.TrimSpace(b)), &rec) != nil || rec.Op != OpShutdown || rec.Site != "ams01" || rec.Mode != ModeDryRun {
		t.Fatalf("actions: %d %s", code, b)
	}
	if code, _ := do("POST", "/api/v1/actions/"+rec.ID+"/undo", nil, map[string]string{"Authorization": "Bearer nope"}); code != http.StatusUnauthorized {
		t.Fatalf("undo with a bad token: %d", code)
	}
	code, b = do("POST", "/api/v1/actions/"+rec.ID+"/undo", nil, map[string]string{"Authorization": "Bearer tok", "X-Outagewatch-Who": "carol"})
	if code != 200 || !strings.Contains(b, `"who":"carol"`) || !strings.Contains(b, `"of":"`+rec.ID+`"`) {
		t.Fatalf("undo: %d %s", code, b)
	}
	// Capacity at the start of the scenario (acceptable 70 %): ATL (600 of
	// 2,000) has 800; EWR (600 of 1,000) 100; IAD's sections 100 + 200 +
	// 200, which covers the 500 EWR is asked for.
	code, b = do("GET", "/api/v1/capacity?dc=ATL&need=500", nil, nil)
	if code != 200 || b != `{"dc":"ATL","need_ms":500,"ok":true,"room_ms":800}`+"\n" {
		t.Fatalf("capacity ATL: %d %s", code, b)
	}
	code, b = do("GET", "/api/v1/capacity?dc=EWR&need=500", nil, nil)
	if code != 200 || b != `{"dc":"EWR","need_ms":500,"ok":false,"room_ms":100,"nearest":[{"dc":"IAD","latency_ms":5,"room_ms":500}]}`+"\n" {
		t.Fatalf("capacity EWR: %d %s", code, b)
	}
	code, b = do("GET", "/api/v1/capacity?dc=ORD&need=1200", nil, nil)
	if code != 200 || b != `{"dc":"ORD","need_ms":1200,"ok":false,"room_ms":300,"nearest":[{"dc":"IAD","latency_ms":15,"room_ms":500},{"dc":"ATL","latency_ms":16,"room_ms":800}]}`+"\n" {
		t.Fatalf("capacity ORD: %d %s", code, b)
	}
	if code, _ := do("GET", "/api/v1/capacity?dc=XYZ&need=1", nil, nil); code != http.StatusBadRequest {
		t.Fatalf("unknown dc: %d", code)
	}
}

// Whatever arrives at the webhook, the handler answers 204 or a 4xx, and
// never panics.
func FuzzWebhook(f *testing.F) {
	f.Add([]byte(`{"id":"d07c","status":"firing","rule":"transit-packet-loss","detector":"packet_loss","entity":"transit:1299","at":"2019-06-20T12:15:00Z","details":{"sites":["ams01","fra01"]}}`))
	f.Add([]byte(`{"id":"d07c","status":"resolved","detector":"packet_loss","entity":"transit:1299@ams01","at":"2019-06-20T12:45:00Z"}`))
	f.Add([]byte(`{"detector":"packet_loss","entity":"transit:99999999999","details":{"sites":[1,null,{}]}}`))
	f.Add([]byte(`not json`))
	cfg, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		f.Fatal(err)
	}
	cfg.Rules = nil
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := NewTransits(cfg, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := (&API{Transits: tr, Secret: "k"}).Handler()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/api/v1/alerts/webhook", bytes.NewReader(body))
		for k, v := range signed("k", string(body)) {
			req.Header.Set(k, v)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// signed returns the headers of a delivery of body signed now with secret.
func signed(secret, body string) map[string]string {
	ts := time.Now().Unix()
	return map[string]string{alerting.HeaderTimestamp: strconv.FormatInt(ts, 10), alerting.HeaderSignature: alerting.Sign(secret, ts, []byte(body))}
}

// Only a signed, fresh, first delivery acts: unsigned posts, a wrong
// secret, a timestamp older or newer than the skew and the same delivery
// posted twice are refused with their reason, counted, and plan nothing;
// without a secret every post is refused.
func TestWebhookAuthentication(t *testing.T) {
	cfg, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransits(cfg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	api := &API{Transits: tr, Secret: "s3cret", MaxSkew: 2 * time.Minute, Refused: NewRefusedCounter(reg)}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	post := func(body string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/alerts/webhook", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	ev := func(site string) string {
		return `{"id":"d07c","status":"firing","rule":"transit-packet-loss","detector":"packet_loss","signal":"packet_loss","entity":"transit:1299@` + site + `","at":"2019-06-20T12:15:00Z","start":"2019-06-20T12:10:00Z","summary":"loss"}`
	}
	at := func(secret, body string, ts int64) map[string]string {
		return map[string]string{alerting.HeaderTimestamp: strconv.FormatInt(ts, 10), alerting.HeaderSignature: alerting.Sign(secret, ts, []byte(body))}
	}
	now := time.Now().Unix()
	good := at("s3cret", ev("ams01"), now)
	for _, c := range []struct {
		name string
		body string
		hdr  map[string]string
		code int
		msg  string
	}{
		{"unsigned", ev("ams01"), nil, http.StatusUnauthorized, "unsigned alert event: X-Outagewatch-Signature and X-Outagewatch-Timestamp are required"},
		{"timestamp only", ev("ams01"), map[string]string{alerting.HeaderTimestamp: strconv.FormatInt(now, 10)}, http.StatusUnauthorized, "unsigned alert event"},
		{"wrong secret", ev("ams01"), at("guess", ev("ams01"), now), http.StatusUnauthorized, "bad signature"},
		{"body changed", ev("fra01"), good, http.StatusUnauthorized, "bad signature"},
		{"stale", ev("ams01"), at("s3cret", ev("ams01"), now-181), http.StatusUnauthorized, "stale alert event: signed timestamp " + strconv.FormatInt(now-181, 10) + " is 3m"},
		{"from the future", ev("ams01"), at("s3cret", ev("ams01"), now+181), http.StatusUnauthorized, "stale alert event"},
		{"first delivery", ev("ams01"), good, http.StatusNoContent, ""},
		{"replayed", ev("ams01"), good, http.StatusConflict, "replayed alert event: this signed delivery was already accepted"},
		{"retry signed anew", ev("lon01"), at("s3cret", ev("lon01"), now+1), http.StatusNoContent, ""},
	} {
		code, msg := post(c.body, c.hdr)
		if code != c.code || !strings.HasPrefix(msg, c.msg) {
			t.Errorf("%s: %d %q, want %d %q", c.name, code, msg, c.code, c.msg)
		}
	}
	recs, err := tr.Records()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Site)
	}
	if strings.Join(got, ", ") != "shutdown ams01, shutdown lon01" {
		t.Fatalf("records: %v", got)
	}
	for reason, want := range map[string]float64{"unsigned": 2, "bad-signature": 2, "stale": 2, "replayed": 1, "no-secret": 0} {
		if n := testutil.ToFloat64(api.Refused.WithLabelValues(reason)); n != want {
			t.Errorf("refused %s: %v, want %v", reason, n, want)
		}
	}

	// No secret: every post is refused, signed or not.
	open := httptest.NewServer((&API{Transits: tr}).Handler())
	defer open.Close()
	req, _ := http.NewRequest("POST", open.URL+"/api/v1/alerts/webhook", strings.NewReader(ev("fra01")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("no secret: %d", resp.StatusCode)
	}
	if recs, _ := tr.Records(); len(recs) != 2 {
		t.Fatalf("no secret: %d records", len(recs))
	}
}

// flaky fails its first DisablePeer calls, as a gobgpd restarting would.
type flaky struct {
	mu    sync.Mutex
	fails int
	calls []string
}

func (f *flaky) DisablePeer(_ context.Context, n, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "disable "+n)
	if f.fails > 0 {
		f.fails--
		return errors.New("gobgpd restarting")
	}
	return nil
}

func (f *flaky) EnablePeer(_ context.Context, n string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "enable "+n)
	return nil
}

// A delivery that failed here (502, the gobgp call failed) is not a
// replay when the sender tries it again, even within the same second with
// the same signature; once acted on, it is.
func TestWebhookRetryAfterFailureIsNoReplay(t *testing.T) {
	cfg, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mode = ModeEnforce
	sp := &flaky{fails: 1}
	speakers := map[string]Speaker{}
	for _, s := range cfg.SiteNames() {
		speakers[s] = sp
	}
	tr, err := NewTransits(cfg, speakers, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&API{Transits: tr, Secret: "s3cret"}).Handler())
	defer srv.Close()
	body := `{"id":"d07c","status":"firing","rule":"transit-packet-loss","detector":"packet_loss","signal":"packet_loss","entity":"transit:3356@fra01","at":"2019-06-20T12:15:00Z","start":"2019-06-20T12:10:00Z","summary":"loss"}`
	hdr := signed("s3cret", body)
	var codes []int
	for range 3 {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/alerts/webhook", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[502 204 409]" {
		t.Fatalf("codes %v, want 502 (gobgp failed), 204 (the retry acts), 409 (a replay)", codes)
	}
	recs, _ := tr.Records()
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Site)
	}
	if strings.Join(got, ", ") != "shutdown fra01, refused fra01, shutdown fra01" ||
		strings.Join(sp.calls, ", ") != "disable 192.0.2.22, enable 192.0.2.22, disable 192.0.2.22" {
		t.Fatalf("records %v, speaker calls %v", got, sp.calls)
	}
}
