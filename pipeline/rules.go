package pipeline

import (
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/rules"
)

// SetRules judges with set from the next bucket on, as a restart with
// set would (see judgeStage.swap), and takes its severity thresholds,
// under the overrides the pipeline was built with. Alerts that set no
// longer judges resolve on the next bucket (retireOrphans). Call it
// between two calls of Process, Advance or Close, on their goroutine; a
// set whose thresholds do not hold under the overrides changes nothing.
func (p *Pipeline) SetRules(set *rules.Set) error {
	sev, err := correlate.FromRules(set.Severity, p.cfg.Severity)
	if err != nil {
		return err
	}
	p.judge.swap(set, p.log)
	p.corr.mu.Lock()
	p.corr.corr.SetSeverity(sev)
	p.corr.mu.Unlock()
	p.cfg.Rules = set
	p.retireOrphans()
	return nil
}

// retireOrphans has the alert stage resolve, on the next bucket, the
// alerts firing that the rules now bound will never judge again (the
// rules changed while the service was down, or were reloaded): otherwise
// they, and the outage events they hold open, would stay firing for good.
func (p *Pipeline) retireOrphans() {
	why := p.judge.orphaned()
	var n []string
	for _, ev := range p.alert.mgr.Active() {
		if r := why(&ev); r != "" {
			n = append(n, ev.Rule+" "+ev.Entity+" ("+r+")")
		}
	}
	if len(n) == 0 {
		return
	}
	p.alert.retire = why
	p.log.Warn("alerts firing that the rules no longer judge resolve at the next bucket", "alerts", len(n), "first", n[0])
}
