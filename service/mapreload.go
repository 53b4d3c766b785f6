package service

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/outagewatch/outagewatch/netmap"
)

// Stages that take a reloaded map, as indexes of Staged.mapApplied.
const (
	mapStageOne = iota
	mapStageTwo
)

// WatchMap reloads the mapping file (map: in the config) without a
// restart: when its modification time or size changes (checked every
// interval) or on SIGHUP. The new file is read and checked off the
// stages' loops; a file that does not load is logged and the old map
// kept. Each stage swaps it into its own map on its own goroutine between
// two batches (reloadMap), so no decoder and no correlator ever sees half
// a map. Call it before Run or while it runs; it stops with ctx.
//
// A reload changes what records and alerts are attributed and named with
// from then on; an entity already routed to a stage-two partition stays
// there while this process runs (the router keeps its keys), so a series
// never splits over two partitions mid-alert.
func (s *Staged) WatchMap(ctx context.Context, interval time.Duration) {
	if s.cfg.Map == "" {
		return
	}
	w := newMapWatcher(s.cfg.resolve(s.cfg.Map), s.log)
	s.mapw.Store(w)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				w.check(true)
			case <-tick.C:
				w.check(false)
			}
		}
	}()
}

// reloadMap swaps the latest map loaded by WatchMap into m, the map of
// the stage numbered stage, if that stage has not taken it yet. It runs
// on the stage's goroutine.
func (s *Staged) reloadMap(stage int, m *netmap.Map) {
	w := s.mapw.Load()
	if w == nil {
		return
	}
	n, v := w.since(s.mapApplied[stage].Load())
	if n == nil {
		return
	}
	m.Replace(n)
	s.mapApplied[stage].Store(v)
}

// mapWatcher loads a changed mapping file and keeps the latest one that
// loaded, numbered, for every stage to take.
type mapWatcher struct {
	file    string
	log     *slog.Logger
	mu      sync.Mutex
	mtime   time.Time
	size    int64
	latest  *netmap.Map
	version int64 // of latest; 0 before any reload
}

func newMapWatcher(file string, log *slog.Logger) *mapWatcher {
	w := &mapWatcher{file: file, log: log}
	if st, err := os.Stat(file); err == nil {
		w.mtime, w.size = st.ModTime(), st.Size()
	}
	return w
}

// check loads the file if it changed since the last load (or always, when
// forced) and reports whether a new map is ready.
func (w *mapWatcher) check(force bool) bool {
	st, err := os.Stat(w.file)
	if err != nil {
		w.log.Warn("mapping file", "file", w.file, "err", err)
		return false
	}
	w.mu.Lock()
	changed := force || !st.ModTime().Equal(w.mtime) || st.Size() != w.size
	w.mu.Unlock()
	if !changed {
		return false
	}
	start := time.Now()
	m, err := netmap.LoadFile(nil, w.file)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mtime, w.size = st.ModTime(), st.Size()
	if err != nil {
		w.log.Error("mapping file not reloaded; keeping the old map", "err", err)
		return false
	}
	w.latest = m
	w.version++
	w.log.Info("mapping file reloaded", "file", w.file, "asns", len(m.Names), "origins", m.Origins.Len(),
		"prefix_countries", m.PrefixCountries.Len(), "regions", m.Regions.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
	return true
}

// since returns the latest map and its version when it is newer than
// have; nil when it is not.
func (w *mapWatcher) since(have int64) (*netmap.Map, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.version <= have {
		return nil, have
	}
	return w.latest, w.version
}
