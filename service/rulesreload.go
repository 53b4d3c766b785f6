package service

import (
	"context"
	"maps"
	"slices"

	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/internal/hangup"
	"github.com/outagewatch/outagewatch/rules"
)

// WatchRules loads the rules again on SIGHUP, as Prometheus and
// Alertmanager reload theirs (ReloadRules). Call it before Run or while
// it runs; it stops with ctx.
func (s *Staged) WatchRules(ctx context.Context) {
	hangup.Notify(ctx, func() { _ = s.ReloadRules() })
}

// ReloadRules loads the rules the config names and checks them as a start
// would: each file, the action rules the sinks name, the severity
// thresholds under the config's overrides. A set that passes is what
// stage two judges with from its next batch, in every partition it holds
// and every one it restores (pipeline.SetRules: a rule of the same name
// and detector keeps its state; alerts no rule judges any more resolve);
// one that fails is logged and counted, and the rules in force stay.
// Stage one reads no rules but the signals they declare, which a reload
// declares for it too.
func (s *Staged) ReloadRules() error {
	set, err := loadRules(s.cfg)
	if err == nil {
		err = checkActionRules(s.cfg, set)
	}
	if err == nil {
		_, err = correlate.FromRules(set.Severity, s.cfg.Correlation.Severity)
	}
	if err != nil {
		s.status.rulesReload(false)
		s.log.Error("rules not reloaded; the rules in force stay", "err", err)
		return err
	}
	s.set.Store(set)
	s.rulesVersion.Add(1)
	s.status.rulesReload(true)
	s.log.Info("rules reloaded", "rules", len(set.Rules))
	return nil
}

// reloadRules binds the rules reloaded since this stage last looked into
// every partition it holds. It runs on stage two's goroutine, between
// two batches.
func (t *stageTwo) reloadRules() {
	v := t.s.rulesVersion.Load()
	if v == t.s.rulesApplied.Load() {
		return
	}
	set := t.s.rules()
	for _, part := range slices.Sorted(maps.Keys(t.tasks)) {
		if err := t.tasks[part].task.Pipeline().SetRules(set); err != nil {
			// ReloadRules checked the thresholds; a partition that still
			// refuses keeps judging with the rules it has.
			t.s.log.Error("stage two: partition keeps its rules", "partition", part, "err", err)
		}
	}
	t.s.rulesApplied.Store(v)
}

// rules returns the rules in force.
func (s *Staged) rules() *rules.Set { return s.set.Load() }
