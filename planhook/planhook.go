// Package planhook delivers Traffic Manager plan changes to whatever
// carries them out: a webhook (signed like the alert webhook, so one
// receiver can check both with one secret) or a Kafka topic. Only the
// difference from the previous tick is news, but every message carries the
// whole plan too, so a receiver that missed one catches up on the next.
package planhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// HeaderSeq carries the message's sequence number, so a receiver can drop
// a duplicate or notice a gap.
const HeaderSeq = "X-Outagewatch-Plan-Seq"

// Message is one tick's plan change.
type Message struct {
	// Seq increases by one per tick that changed something.
	Seq     uint64                  `json:"seq"`
	At      time.Time               `json:"at"`
	Mode    string                  `json:"mode"`
	Changes []trafficmanager.Change `json:"changes"`
	Plan    trafficmanager.State    `json:"plan"`
	Notes   []string                `json:"notes,omitempty"`
}

// Publisher delivers a message or returns an error to retry it.
type Publisher interface {
	Name() string
	Publish(ctx context.Context, m *Message) error
}

// Webhook posts messages as JSON.
type Webhook struct {
	URL    string
	Secret string
	Client *http.Client
}

// NewWebhook checks the URL.
func NewWebhook(rawURL, secret string) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("planhook: webhook URL %q: want http(s)://host/path", rawURL)
	}
	return &Webhook{URL: rawURL, Secret: secret, Client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Name implements Publisher.
func (w *Webhook) Name() string { return "webhook" }

// Publish posts m; a non-2xx answer is an error.
func (w *Webhook) Publish(ctx context.Context, m *Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("planhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "outagewatch")
	req.Header.Set(HeaderSeq, strconv.FormatUint(m.Seq, 10))
	if w.Secret != "" {
		// Signed as alert webhooks are: over the timestamp and the body.
		ts := time.Now().Unix()
		req.Header.Set(alerting.HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(alerting.HeaderSignature, alerting.Sign(w.Secret, ts, body))
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		return fmt.Errorf("planhook: post plan %d: %w", m.Seq, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("planhook: plan %d: status %d: %s", m.Seq, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return nil
}

// Kafka writes messages to a topic, all under one key so that they stay
// in order on one partition.
type Kafka struct {
	W   *kafka.Writer
	Key string
}

// NewKafka returns a publisher to topic on brokers through tr (built by
// kafkaio.Transport, with the caller's TLS and SASL; nil is kafka-go's
// default, plain TCP).
func NewKafka(brokers []string, topic string, tr *kafka.Transport) (*Kafka, error) {
	if len(brokers) == 0 || topic == "" {
		return nil, errors.New("planhook: kafka: want brokers and a topic")
	}
	return &Kafka{W: kafkaio.NewWriter(brokers, topic, tr), Key: "traffic-manager"}, nil
}

// Name implements Publisher.
func (k *Kafka) Name() string { return "kafka" }

// Publish writes m and waits for the brokers' acknowledgement.
func (k *Kafka) Publish(ctx context.Context, m *Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	err = k.W.WriteMessages(ctx, kafka.Message{Key: []byte(k.Key), Value: body, Time: m.At,
		Headers: []kafka.Header{{Key: HeaderSeq, Value: []byte(strconv.FormatUint(m.Seq, 10))}}})
	if err != nil {
		return fmt.Errorf("planhook: kafka %s: plan %d: %w", k.W.Topic, m.Seq, err)
	}
	return nil
}

// Close flushes and closes the writer.
func (k *Kafka) Close() error { return k.W.Close() }

// Driver runs the planner tick by tick and publishes what changed. In
// dry-run it still numbers and returns the messages but publishes nothing.
type Driver struct {
	Mode       string
	Publishers []Publisher
	// Metrics, if set, is updated every tick with the plan in force.
	Metrics *Metrics
	// Predictor, if set, records each withdrawal's effect on the load
	// reports and replaces hand-written failover rows with learnt ones
	// once it has seen enough.
	Predictor *trafficmanager.Predictor
	state     trafficmanager.State
	seq       uint64
}

// Tick plans in against the plan in force and, if anything changed,
// publishes the change to every publisher. The new plan is kept only when
// every publisher took it, so a failed delivery is retried as part of the
// next tick's difference; the metrics describe the plan kept, so they say
// what the publishers were told.
func (d *Driver) Tick(ctx context.Context, at time.Time, in trafficmanager.Input) (*Message, error) {
	var learnt []string
	if d.Predictor != nil {
		d.Predictor.Observe(in, d.state.Withdrawn)
		in, learnt = d.Predictor.Apply(in)
	}
	r := trafficmanager.Tick(in, d.state)
	r.Notes = append(r.Notes, learnt...)
	if len(r.Changes) == 0 {
		// Nothing to publish, but a paced step's expectations and the
		// error trigger's counts carry on.
		d.state = r.State
		d.Metrics.observe(in, r, d.state, nil)
		return nil, nil
	}
	m := &Message{Seq: d.seq + 1, At: at, Mode: d.Mode, Changes: r.Changes, Plan: r.State, Notes: r.Notes}
	if d.Mode == "enforce" {
		var errs []error
		for _, p := range d.Publishers {
			if err := p.Publish(ctx, m); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			d.Metrics.observe(in, r, d.state, nil)
			d.Metrics.failed()
			return m, err
		}
	}
	d.seq, d.state = m.Seq, r.State
	d.Metrics.observe(in, r, d.state, r.Changes)
	return m, nil
}

// State is the plan in force.
func (d *Driver) State() trafficmanager.State { return d.state }
