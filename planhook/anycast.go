package planhook

import (
	"context"
	"fmt"
	"net/netip"

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
type Anycast struct {
	Sites map[string]AnycastSite
	// MaxWithdrawn caps the locations withdrawn at once (default 1), the
	// counterpart of the transit limit per site: a plan that would drain
	// more is refused whole, so a bad input cannot take the network down.
	MaxWithdrawn int
}

// Name implements Publisher.
func (a *Anycast) Name() string { return "anycast" }

// Publish applies the withdraw and announce changes of m.
func (a *Anycast) Publish(ctx context.Context, m *Message) error {
	limit := a.MaxWithdrawn
	if limit == 0 {
		limit = 1
	}
	if n := len(m.Plan.Withdrawn); n > limit {
		return fmt.Errorf("anycast: refused: plan %d would withdraw %d locations %v, limit %d", m.Seq, n, m.Plan.Withdrawn, limit)
	}
	for _, c := range m.Changes {
		if c.Op != "withdraw" && c.Op != "announce" {
			continue
		}
		s, ok := a.Sites[c.Location]
		if !ok {
			return fmt.Errorf("anycast: %s %s: no prefixes configured for it", c.Op, c.Location)
		}
		for _, p := range s.Prefixes {
			var err error
			if c.Op == "withdraw" {
				err = s.Router.Withdraw(ctx, p, s.NextHop)
			} else {
				err = s.Router.Announce(ctx, p, s.NextHop)
			}
			if err != nil {
				return fmt.Errorf("anycast: %s %s: %w", c.Op, c.Location, err)
			}
		}
	}
	return nil
}
