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
	"github.com/outagewatch/outagewatch/obs"
)

// WatchMap reloads the mapping file (map: in the config) without a
// restart: when its modification time changes (checked every interval) or
// on SIGHUP. The new file is read and checked off the main loop; a file
// that does not load is logged and the old map kept. It is swapped in on
// the pipeline's goroutine just before the next bucket closes, so no
// decoder ever sees half a map. Call it before Run; it stops with ctx.
func (s *Service) WatchMap(ctx context.Context, interval time.Duration) {
	if s.cfg.Map == "" {
		return
	}
	w := newMapWatcher(s.cfg.resolve(s.cfg.Map), s.log)
	m := s.p.Env().Map
	s.p.Env().BeforeClose(func(_, _ int64, _ obs.Sink) { w.apply(m) })
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

// mapWatcher loads a changed mapping file and holds it until apply.
type mapWatcher struct {
	file    string
	log     *slog.Logger
	mu      sync.Mutex
	mtime   time.Time
	size    int64
	pending *netmap.Map
}

func newMapWatcher(file string, log *slog.Logger) *mapWatcher {
	w := &mapWatcher{file: file, log: log}
	if st, err := os.Stat(file); err == nil {
		w.mtime, w.size = st.ModTime(), st.Size()
	}
	return w
}

// check loads the file if it changed since the last load (or always, when
// forced) and reports whether a new map is pending.
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
	w.pending = m
	w.log.Info("mapping file reloaded", "file", w.file, "asns", len(m.Names), "origins", m.Origins.Len(),
		"prefix_countries", m.PrefixCountries.Len(), "regions", m.Regions.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
	return true
}

// apply swaps a pending map into m; it runs on the pipeline's goroutine.
func (w *mapWatcher) apply(m *netmap.Map) {
	w.mu.Lock()
	n := w.pending
	w.pending = nil
	w.mu.Unlock()
	if n != nil {
		m.Replace(n)
	}
}
