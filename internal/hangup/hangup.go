// Package hangup runs a reload on each SIGHUP, the signal on which
// daemons read their configuration again (Prometheus, Alertmanager), so
// that every outagewatch process that reloads does it on the same terms.
package hangup

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Notify calls reload on each SIGHUP until ctx ends, one call at a time.
// It takes the signal before it returns: from then on SIGHUP no longer
// ends the process, whatever reload does.
func Notify(ctx context.Context, reload func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload()
			}
		}
	}()
}
