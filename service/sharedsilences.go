package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

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

// legacySilencesFile is where versions before the silence topic kept the
// silences set through the API, in each instance's data dir
// (silence.Store). migratedSuffix is added to its name once they are on
// the topic: the file stays for whoever wants to look, and is not read
// again.
const (
	legacySilencesFile = "silences.json"
	migratedSuffix     = ".migrated"
)

// carrySilences carries the silences an older version kept in
// data_dir/silences.json over to the silence topic, so an upgrade does not
// drop them, retrying while the brokers fail until ctx ends. A file that
// does not parse is left as it is, with an error logged: an older version
// refused to start on it too.
func (s *Staged) carrySilences(ctx context.Context) {
	file := filepath.Join(s.cfg.DataDir, legacySilencesFile)
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		s.log.Error("silences of an older version not carried over to the silence topic", "file", file, "err", err)
		return
	}
	var l []silence.Silence
	if err := json.Unmarshal(b, &l); err != nil {
		s.log.Error("silences of an older version not carried over to the silence topic", "file", file, "err", err)
		return
	}
	for r := kafkaio.NewRetry(); ; {
		err := s.publishLegacySilences(ctx, file, l)
		if err == nil || ctx.Err() != nil {
			return
		}
		if kafkaio.Sleep(ctx, r.Fail(time.Now(), s.log, "silences of an older version not carried over yet; retrying", err, "file", file)) != nil {
			return
		}
	}
}

// publishLegacySilences writes to the silence topic each silence of l that
// has not ended and whose ID the topic does not name yet (a value or a
// tombstone: one deleted since is not brought back), so a second start,
// or another instance with a copy of the file, writes nothing twice. Then
// it renames file to show it is done.
func (s *Staged) publishLegacySilences(ctx context.Context, file string, l []silence.Silence) error {
	topic := s.cfg.Kafka.SilenceTopic
	onTopic, err := s.silenceIDs(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	var recs []kafka.Record
	var carried []silence.Silence
	expired, already := 0, 0
	for i, sl := range l {
		sl.FromConfig = false
		switch {
		case !sl.End.After(now):
			expired++
			continue
		case onTopic[sl.ID]:
			already++
			continue
		}
		if err := sl.Validate(); err != nil || sl.ID == "" {
			s.log.Warn("silence of an older version not carried over: invalid", "file", file, "index", i, "id", sl.ID, "err", err)
			continue
		}
		v, err := json.Marshal(sl)
		if err != nil {
			return fmt.Errorf("silence %s: %w", sl.ID, err)
		}
		recs = append(recs, kafka.Record{Key: kafka.NewBytes([]byte(sl.ID)), Value: kafka.NewBytes(v)})
		carried = append(carried, sl)
		onTopic[sl.ID] = true // a file listing an ID twice writes it once
	}
	if len(recs) > 0 {
		if _, err := s.produce(ctx, topic, 0, recs); err != nil {
			return fmt.Errorf("silence topic %s: %w", topic, err)
		}
	}
	if s.mute != nil {
		// At once here, as Add does; the other instances as they read it.
		s.mute.mu.Lock()
		for _, sl := range carried {
			s.mute.api[sl.ID] = sl
		}
		s.mute.mu.Unlock()
	}
	if err := os.Rename(file, file+migratedSuffix); err != nil {
		// On the topic already: the next start finds them there and
		// writes nothing.
		s.log.Warn("silences of an older version carried over, but the file not renamed", "file", file, "err", err)
	}
	s.log.Info("silences of an older version carried over to the silence topic", "file", file, "topic", topic,
		"carried", len(carried), "already_on_topic", already, "expired", expired, "renamed_to", file+migratedSuffix)
	return nil
}

// silenceIDs are the keys on the silence topic now, values and tombstones.
func (s *Staged) silenceIDs(ctx context.Context) (map[string]bool, error) {
	topic := s.cfg.Kafka.SilenceTopic
	h, err := s.highWatermarks(ctx, []string{topic})
	if err != nil {
		return nil, fmt.Errorf("silence topic %s: %w", topic, err)
	}
	ids := map[string]bool{}
	end := h[tp{topic, 0}]
	if end <= 0 {
		return ids, nil
	}
	// A minute: the topic holds a record or two per silence, read in
	// a fetch or two; longer is a broker in trouble, and the caller
	// retries.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = kafkaio.ReadRange(rctx, s.cfg.Kafka.Brokers, s.opts.Dialer, s.log, topic, 0, kafka.FirstOffset, end, func(m kafka.Message) error {
		ids[string(m.Key)] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("silence topic %s: %w", topic, err)
	}
	return ids, nil
}
