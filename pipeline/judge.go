package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/rules"
)

// judgeStage hands each point of a closed bucket to the detectors of the
// rules that watch its series; their findings go into the batch in the
// rules' order (after feed health's, whose stage runs before). Its state
// is every rule's detector; its counter is the findings.
type judgeStage struct {
	// tap, when set, sees every bucket before the detectors do (Config.Tap).
	tap func(*aggregate.Closed)
	// match caches which rules watch each series.
	match matchCache

	// mu guards the rules and their detectors, which the loop judges
	// with while the HTTP side reads what they cannot judge (Stats), and
	// the counter.
	mu       sync.Mutex
	rules    []*boundRule
	findings int64
}

type boundRule struct {
	rule *rules.Rule
	det  detectors.Detector
	pts  []aggregate.Point
}

func newJudgeStage(cfg Config) *judgeStage {
	j := &judgeStage{tap: cfg.Tap}
	for _, r := range cfg.Rules.Rules {
		j.rules = append(j.rules, &boundRule{rule: r, det: r.Params.Build(r.Name)})
	}
	return j
}

func (j *judgeStage) Name() string { return "judge" }

func (j *judgeStage) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	c := b.Bucket
	if j.tap != nil {
		j.tap(c)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(b.Findings)
	for _, br := range j.rules {
		br.pts = br.pts[:0]
	}
	for _, pt := range c.Points {
		idx, ok := j.match.get(pt.Series)
		if !ok {
			idx = j.matchRules(pt.Series)
			j.match.put(pt.Series, idx)
		}
		for _, i := range idx {
			j.rules[i].pts = append(j.rules[i].pts, pt)
		}
	}
	for _, br := range j.rules {
		if len(br.pts) == 0 {
			continue
		}
		br.det.Bucket(c, br.pts, func(f detectors.Finding) { b.Findings = append(b.Findings, Finding{Rule: br.rule, Finding: f}) })
	}
	j.findings += int64(len(b.Findings) - n)
	return ctx, b, nil
}

// matchRules returns the indexes of the rules that watch s.
func (j *judgeStage) matchRules(s *aggregate.Series) []int {
	var idx []int
	for i, br := range j.rules {
		if br.rule.Matches(s.Signal, s.Entity) {
			idx = append(idx, i)
		}
	}
	return idx
}

// unjudgeable lists, by rule, the series the rule cannot judge at its
// threshold.
func (j *judgeStage) unjudgeable() map[string][]string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out map[string][]string
	for _, b := range j.rules {
		if u, ok := b.det.(detectors.Unjudgeable); ok {
			if l := u.Unjudgeable(); len(l) > 0 {
				if out == nil {
					out = map[string][]string{}
				}
				out[b.rule.Name] = l
			}
		}
	}
	return out
}

func (j *judgeStage) Counters() map[string]int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return map[string]int64{"findings": j.findings}
}

// save writes every rule's detector state, and its detector's name, by
// rule name.
func (j *judgeStage) save(cp *checkpoint) error {
	cp.Detectors, cp.DetectorNames = map[string][]byte{}, map[string]string{}
	for _, br := range j.rules {
		var err error
		if cp.Detectors[br.rule.Name], err = br.det.MarshalBinary(); err != nil {
			return fmt.Errorf("pipeline: checkpoint rule %s: %w", br.rule.Name, err)
		}
		cp.DetectorNames[br.rule.Name] = br.rule.Detector
	}
	return nil
}

// restore puts back the state of the rules checkpointed; rules new since
// the checkpoint start fresh, and so does a rule that now binds another
// detector than the one whose state was saved under its name (a
// checkpoint written before names were saved is taken to be of the same
// detector). The counter starts again from zero, as a process's counters
// do.
func (j *judgeStage) restore(cp *checkpoint) error {
	for _, br := range j.rules {
		st, ok := cp.Detectors[br.rule.Name]
		if name, known := cp.DetectorNames[br.rule.Name]; !ok || known && name != br.rule.Detector {
			continue
		}
		if err := br.det.UnmarshalBinary(st); err != nil {
			return err
		}
	}
	return nil
}

// swap binds the rules of set in place of the stage's: a rule of the
// same name and detector as before keeps its detector's state, carried
// over as a checkpoint would carry it (so a changed threshold judges the
// series where the old one left them), and any other starts afresh. It
// runs between two buckets.
func (j *judgeStage) swap(set *rules.Set, log *slog.Logger) {
	j.mu.Lock()
	defer j.mu.Unlock()
	old := make(map[string]*boundRule, len(j.rules))
	for _, br := range j.rules {
		old[br.rule.Name] = br
	}
	j.rules = j.rules[:0:0]
	for _, r := range set.Rules {
		br := &boundRule{rule: r, det: r.Params.Build(r.Name)}
		if prev := old[r.Name]; prev != nil && prev.rule.Detector == r.Detector {
			st, err := prev.det.MarshalBinary()
			if err == nil {
				err = br.det.UnmarshalBinary(st)
			}
			if err != nil {
				br.det = r.Params.Build(r.Name)
				log.Warn("rules reload: rule starts afresh; its detector's state did not carry over", "rule", r.Name, "err", err)
			}
		}
		j.rules = append(j.rules, br)
	}
	j.match = matchCache{}
}

// orphaned says why an alert restored from a checkpoint will never be
// judged again by the rules this stage runs: its rule is gone
// (detectors.ReasonRuleRemoved), or binds another detector, or no longer
// watches the alert's series (ReasonRuleChanged); "" for an alert still
// judged, and for feed faults, which are the feeds' and not a rule's.
func (j *judgeStage) orphaned() func(*alerting.Event) string {
	byName := make(map[string]*boundRule, len(j.rules))
	for _, br := range j.rules {
		byName[br.rule.Name] = br
	}
	return func(ev *alerting.Event) string {
		if ev.Rule == StageFeedHealth {
			return ""
		}
		br := byName[ev.Rule]
		if br == nil {
			return detectors.ReasonRuleRemoved
		}
		if br.rule.Detector != ev.Detector {
			return detectors.ReasonRuleChanged
		}
		if _, grouped := br.det.(detectors.Grouped); grouped {
			return ""
		}
		if sig, ok := obs.Lookup(ev.Signal); !ok || !br.rule.Matches(sig, ev.Entity) {
			return detectors.ReasonRuleChanged
		}
		return ""
	}
}
