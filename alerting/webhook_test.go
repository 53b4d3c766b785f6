package alerting

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// verifySignature is what a receiver does: recompute and compare in
// constant time.
func verifySignature(secret string, body []byte, header, timestamp string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

type capturedReq struct {
	header http.Header
	body   []byte
}

func TestWebhookSignatureAndBody(t *testing.T) {
	var mu sync.Mutex
	var reqs []capturedReq
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, capturedReq{r.Header.Clone(), b})
		mu.Unlock()
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	defer srv.Close()

	now := time.Unix(1745836500, 0)
	wh, err := NewWebhook(WebhookConfig{Name: "hook", URL: srv.URL, Secret: "s3cret", Headers: map[string]string{"Authorization": "Bearer x"},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ev := testEvent(1)
	if err := wh.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	want := mustMarshal(t, ev)
	eq(t, "body", string(r.body), want)
	// No HTML escaping: the summary's < > & arrive verbatim.
	if !strings.Contains(string(r.body), `"summary":"traffic <fell> & stayed down"`) {
		t.Errorf("body escapes HTML: %s", r.body)
	}
	sig := r.header.Get(HeaderSignature)
	eq(t, "timestamp", r.header.Get(HeaderTimestamp), "1745836500")
	if !verifySignature("s3cret", r.body, sig, "1745836500") {
		t.Errorf("signature %q does not verify", sig)
	}
	if verifySignature("other", r.body, sig, "1745836500") {
		t.Error("signature verifies with the wrong secret")
	}
	// A replay with a fresher timestamp header does not verify.
	if verifySignature("s3cret", r.body, sig, "1745836800") {
		t.Error("signature verifies with another timestamp")
	}
	eq(t, "signature", sig, Sign("s3cret", 1745836500, []byte(want)))
	if err := Verify("s3cret", r.body, sig, "1745836500", now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("verify: %v", err)
	}
	if err := Verify("s3cret", r.body, sig, "1745836500", now.Add(10*time.Minute), 5*time.Minute); err == nil {
		t.Error("a ten-minute-old delivery verifies")
	}
	if err := Verify("s3cret", append([]byte(" "), r.body...), sig, "1745836500", now, 5*time.Minute); err == nil {
		t.Error("an altered body verifies")
	}
	eq(t, "event id header", r.header.Get(HeaderEventID), ev.ID)
	eq(t, "delivery key header", r.header.Get(HeaderDeliveryKey), DeliveryKey(ev))
	eq(t, "content type", r.header.Get("Content-Type"), "application/json")
	eq(t, "custom header", r.header.Get("Authorization"), "Bearer x")
}

func TestWebhookErrors(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusBadGateway)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := int(status.Load())
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(status)
		io.WriteString(w, "upstream broken\n")
	}))
	defer srv.Close()
	wh, err := NewWebhook(WebhookConfig{Name: "hook", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = wh.Send(context.Background(), testEvent(1))
	if err == nil || !strings.Contains(err.Error(), "status 502: upstream broken") {
		t.Fatalf("err = %v", err)
	}
	eq(t, "hint on 502", retryAfterHint(err), 0)
	status.Store(http.StatusTooManyRequests)
	err = wh.Send(context.Background(), testEvent(1))
	eq(t, "hint on 429", retryAfterHint(err), 7*time.Second)

	// Transport error: nothing listens there any more.
	srv.Close()
	if err := wh.Send(context.Background(), testEvent(1)); err == nil {
		t.Fatal("send to closed server succeeded")
	}

	for _, bad := range []string{"", "ftp://x/", "http://", "::"} {
		if _, err := NewWebhook(WebhookConfig{Name: "h", URL: bad}); err == nil {
			t.Errorf("NewWebhook(%q) accepted", bad)
		}
	}
}

// The per-attempt timeout ends a hung receiver's request; the server
// handler returns as soon as the client goes away, so nothing sleeps.
func TestWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	wh, err := NewWebhook(WebhookConfig{Name: "hook", URL: srv.URL, Timeout: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = wh.Send(context.Background(), testEvent(1))
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

// A failed delivery names scheme and host only: the path of many webhook
// URLs is their secret.
func TestWebhookErrorKeepsSecretOutOfLogs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	addr := srv.URL
	srv.Close() // nothing listens there now
	wh, err := NewWebhook(WebhookConfig{Name: "hook", URL: addr + "/services/T0/B0/XyZsecret?token=alsosecret"})
	if err != nil {
		t.Fatal(err)
	}
	err = wh.Send(context.Background(), testEvent(1))
	if err == nil {
		t.Fatal("delivery to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q: want scheme and host %s, no path", err, addr)
	}
	_, err = NewWebhook(WebhookConfig{Name: "hook", URL: "ftp://host/XyZsecret"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("bad scheme error %v", err)
	}
}
