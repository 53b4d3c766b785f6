package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/silence"
)

// sharedSilences are the silences of a whole deployment: those of the
// config, and those set through any instance's API, which travel on a
// compacted topic (key the silence's ID, value its JSON, a tombstone when
// deleted) that every instance reads from the start. So a silence set
// through one instance mutes on every stage-two task, wherever its
// partitions are held, and survives any instance.
type sharedSilences struct {
	s    *Staged
	conf []silence.Silence
	mu   sync.RWMutex
	api  map[string]silence.Silence
}

func newSharedSilences(s *Staged, fromConfig []silence.Silence) (*sharedSilences, error) {
	ss := &sharedSilences{s: s, api: map[string]silence.Silence{}}
	for i, sl := range fromConfig {
		if err := sl.Validate(); err != nil {
			return nil, fmt.Errorf("silences[%d]: %w", i, err)
		}
		if sl.ID == "" {
			sl.ID = fmt.Sprintf("config-%d", i+1)
		}
		sl.FromConfig = true
		ss.conf = append(ss.conf, sl)
	}
	return ss, nil
}

// follow applies the silence topic from its start until ctx ends.
func (ss *sharedSilences) follow(ctx context.Context) {
	k := tp{ss.s.cfg.Kafka.SilenceTopic, 0}
	kafkaio.FetchBatches(ctx, ss.s.cfg.Kafka.Brokers, ss.s.opts.Dialer, ss.s.log, k.topic, k.part, kafka.FirstOffset, func(batch []kafka.Message) bool {
		for i := range batch {
			ss.apply(&batch[i])
		}
		return true
	})
}

// apply takes one record of the silence topic.
func (ss *sharedSilences) apply(m *kafka.Message) {
	id := string(m.Key)
	if len(m.Value) == 0 {
		ss.mu.Lock()
		delete(ss.api, id)
		ss.mu.Unlock()
		return
	}
	var sl silence.Silence
	if err := json.Unmarshal(m.Value, &sl); err != nil || sl.ID != id || sl.Validate() != nil {
		ss.s.log.Warn("silence topic: record skipped", "offset", m.Offset, "key", id, "err", err)
		return
	}
	sl.FromConfig = false
	ss.mu.Lock()
	ss.api[id] = sl
	ss.mu.Unlock()
}

// Add validates sl, gives it an ID and writes it to the silence topic; it
// applies here at once, and on the other instances as they read it.
func (ss *sharedSilences) Add(sl silence.Silence) (silence.Silence, error) {
	if err := sl.Validate(); err != nil {
		return sl, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return sl, err
	}
	sl.ID, sl.FromConfig = hex.EncodeToString(id[:]), false
	b, err := json.Marshal(sl)
	if err != nil {
		return sl, err
	}
	if err := ss.write(sl.ID, b); err != nil {
		return sl, err
	}
	ss.mu.Lock()
	ss.api[sl.ID] = sl
	ss.mu.Unlock()
	return sl, nil
}

// Delete writes a tombstone for an API silence.
func (ss *sharedSilences) Delete(id string) error {
	if slices.ContainsFunc(ss.conf, func(sl silence.Silence) bool { return sl.ID == id }) {
		return silence.ErrFromConfig
	}
	ss.mu.RLock()
	_, ok := ss.api[id]
	ss.mu.RUnlock()
	if !ok {
		return silence.ErrNotFound
	}
	if err := ss.write(id, nil); err != nil {
		return err
	}
	ss.mu.Lock()
	delete(ss.api, id)
	ss.mu.Unlock()
	return nil
}

func (ss *sharedSilences) write(id string, v []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), kafkaio.DialTimeout)
	defer cancel()
	rec := kafka.Record{Key: kafka.NewBytes([]byte(id))}
	if v != nil {
		rec.Value = kafka.NewBytes(v)
	}
	if _, err := ss.s.produce(ctx, ss.s.cfg.Kafka.SilenceTopic, 0, []kafka.Record{rec}); err != nil {
		return fmt.Errorf("silence not written: %w", err)
	}
	return nil
}

// List returns every silence, the config's first, then by start and ID.
func (ss *sharedSilences) List() []silence.Silence {
	return append(slices.Clone(ss.conf), ss.sortedAPI()...)
}

func (ss *sharedSilences) sortedAPI() []silence.Silence {
	ss.mu.RLock()
	out := make([]silence.Silence, 0, len(ss.api))
	for _, sl := range ss.api {
		out = append(out, sl)
	}
	ss.mu.RUnlock()
	slices.SortFunc(out, func(a, b silence.Silence) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Mutes implements correlate.Muter: the first silence of List that
// matches, so every instance names the same one.
func (ss *sharedSilences) Mutes(ev *alerting.Event) (string, bool) {
	for _, l := range [][]silence.Silence{ss.conf, ss.sortedAPI()} {
		for i := range l {
			if l[i].Matches(ev) {
				return "silence " + l[i].ID, true
			}
		}
	}
	return "", false
}
