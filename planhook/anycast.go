package planhook

import (
	"context"
	"fmt"
	"net/netip"
	"sort"

	"github.com/outagewatch/outagewatch/actions"
)

// AnycastSite is a location's anycast prefixes and the router (gobgp) that
// announces them.
type AnycastSite struct {
	Router   actions.Router
	Prefixes []netip.Prefix
	NextHop  netip.Addr
}

// Anycast carries a plan's withdrawals and announcements to gobgp: a data
// center that must be drained entirely stops announcing its anycast
// prefixes, and announces them again when it comes back.
//
// It applies the whole plan, not only its changes: every configured site
// not in the plan's withdrawn list is announced, every one in it withdrawn.
// So a retried or repeated message, or one after a restart, leaves the
// router in the plan's state, and the routes always say what the webhook,
// the Kafka topic and the metrics say. How many locations may be
// withdrawn at once is the planner's guardrail (Input.MaxWithdrawn), so
// that a limit cannot make the routes disagree with the published plan.
type Anycast struct {
	Sites map[string]AnycastSite
	// withdrawn is each site's state on the router, once set.
	withdrawn map[string]bool
}

// Name implements Publisher.
func (a *Anycast) Name() string { return "anycast" }

// Start announces every site: the state before any plan withdraws one.
func (a *Anycast) Start(ctx context.Context) error {
	return a.apply(ctx, nil)
}

// Publish brings the router to m's plan. A site named in the plan but not
// configured is an error, after the configured ones are applied.
func (a *Anycast) Publish(ctx context.Context, m *Message) error {
	if err := a.apply(ctx, m.Plan.Withdrawn); err != nil {
		return err
	}
	for _, l := range m.Plan.Withdrawn {
		if _, ok := a.Sites[l]; !ok {
			return fmt.Errorf("anycast: withdraw %s: no prefixes configured for it", l)
		}
	}
	return nil
}

func (a *Anycast) apply(ctx context.Context, withdrawn []string) error {
	if a.withdrawn == nil {
		a.withdrawn = map[string]bool{}
	}
	want := map[string]bool{}
	for _, l := range withdrawn {
		want[l] = true
	}
	locs := make([]string, 0, len(a.Sites))
	for l := range a.Sites {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	for _, l := range locs {
		if was, known := a.withdrawn[l]; known && was == want[l] {
			continue
		}
		s := a.Sites[l]
		op := "announce"
		if want[l] {
			op = "withdraw"
		}
		for _, p := range s.Prefixes {
			var err error
			if want[l] {
				err = s.Router.Withdraw(ctx, p, s.NextHop)
			} else {
				err = s.Router.Announce(ctx, p, s.NextHop)
			}
			if err != nil {
				delete(a.withdrawn, l) // unknown now: set again next time
				return fmt.Errorf("anycast: %s %s: %w", op, l, err)
			}
		}
		a.withdrawn[l] = want[l]
	}
	return nil
}
