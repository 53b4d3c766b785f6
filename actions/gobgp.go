package actions

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/apiutil"
	"github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Speaker is the BGP speaker whose sessions the actions switch: disabling
// a peer sends it a Cease/Administrative Shutdown NOTIFICATION carrying the
// RFC 8203 communication and keeps the session down until it is enabled.
type Speaker interface {
	DisablePeer(ctx context.Context, neighbor, communication string) error
	EnablePeer(ctx context.Context, neighbor string) error
}

// SessionChecker is a Speaker that can say whether a session is up, so
// that a transit whose sessions are already down for another reason does
// not count as the one left carrying traffic.
type SessionChecker interface {
	Established(ctx context.Context, neighbor string) (bool, error)
}

// Embedded drives a gobgp server running in this process (tests, small
// sites).
type Embedded struct{ S *server.BgpServer }

// DisablePeer shuts the session administratively.
func (e Embedded) DisablePeer(ctx context.Context, neighbor, communication string) error {
	err := settle(ctx, api.PeerState_DOWN, func() error {
		return e.S.DisablePeer(ctx, &api.DisablePeerRequest{Address: neighbor, Communication: communication})
	}, func() (api.PeerState_AdminState, error) { return e.admin(ctx, neighbor) })
	if err != nil {
		return fmt.Errorf("gobgp: disable %s: %w", neighbor, err)
	}
	return nil
}

// EnablePeer lets the session come back up.
func (e Embedded) EnablePeer(ctx context.Context, neighbor string) error {
	err := settle(ctx, api.PeerState_UP, func() error {
		return e.S.EnablePeer(ctx, &api.EnablePeerRequest{Address: neighbor})
	}, func() (api.PeerState_AdminState, error) { return e.admin(ctx, neighbor) })
	if err != nil {
		return fmt.Errorf("gobgp: enable %s: %w", neighbor, err)
	}
	return nil
}

func (e Embedded) admin(ctx context.Context, neighbor string) (api.PeerState_AdminState, error) {
	p, err := e.peer(ctx, neighbor)
	if err != nil {
		return -1, err
	}
	return p.GetState().GetAdminState(), nil
}

// peer is the neighbor's entry in ListPeer.
func (e Embedded) peer(ctx context.Context, neighbor string) (*api.Peer, error) {
	var found *api.Peer
	if err := e.S.ListPeer(ctx, &api.ListPeerRequest{Address: neighbor}, func(p *api.Peer) { found = p }); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("no neighbor %s", neighbor)
	}
	return found, nil
}

// settle asks for an administrative state and waits until the peer has
// it. gobgp hands the request to the peer's state machine through a
// channel of one, and drops a request, answering success, while the one
// before it is still waiting there: a session shut and enabled again in
// quick succession (a shutdown undone when a later session fails) would
// stay down. So the state is read back, and the request sent again every
// settleRetry until it holds, for at most settleFor.
func settle(ctx context.Context, want api.PeerState_AdminState, set func() error, get func() (api.PeerState_AdminState, error)) error {
	deadline := time.Now().Add(settleFor)
	for {
		if err := set(); err != nil {
			return err
		}
		for range settleRetry / settlePoll {
			st, err := get()
			if err != nil {
				return err
			}
			if st == want {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(settlePoll):
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("admin state still not %v after %s", want, settleFor)
		}
	}
}

// A state machine takes its admin state within a loop turn; a second is
// an eternity for it, and ten seconds bounds a call an operator waits on.
const (
	settlePoll  = 20 * time.Millisecond
	settleRetry = time.Second
	settleFor   = 10 * time.Second
)

// Established reports whether the session with neighbor is established.
func (e Embedded) Established(ctx context.Context, neighbor string) (bool, error) {
	p, err := e.peer(ctx, neighbor)
	if err != nil {
		return false, fmt.Errorf("gobgp: %w", err)
	}
	return p.GetState().GetSessionState() == api.PeerState_ESTABLISHED, nil
}

// GRPC drives a gobgpd through its gRPC API.
type GRPC struct {
	Addr   string
	client api.GobgpApiClient
	conn   *grpc.ClientConn
}

// DialGoBGP connects to a gobgpd gRPC API (plaintext: bind it to a
// loopback or management address, as the compose file does).
func DialGoBGP(addr string) (*GRPC, error) {
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("gobgp %s: %w", addr, err)
	}
	return &GRPC{Addr: addr, client: api.NewGobgpApiClient(conn), conn: conn}, nil
}

// Close closes the connection.
func (g *GRPC) Close() error { return g.conn.Close() }

// DisablePeer shuts the session administratively.
func (g *GRPC) DisablePeer(ctx context.Context, neighbor, communication string) error {
	err := settle(ctx, api.PeerState_DOWN, func() error {
		_, err := g.client.DisablePeer(ctx, &api.DisablePeerRequest{Address: neighbor, Communication: communication})
		return err
	}, func() (api.PeerState_AdminState, error) { return g.admin(ctx, neighbor) })
	if err != nil {
		return fmt.Errorf("gobgpd %s: disable %s: %w", g.Addr, neighbor, err)
	}
	return nil
}

func (g *GRPC) admin(ctx context.Context, neighbor string) (api.PeerState_AdminState, error) {
	p, err := g.peer(ctx, neighbor)
	if err != nil {
		return -1, err
	}
	return p.GetState().GetAdminState(), nil
}

// peer is the neighbor's entry in ListPeer.
func (g *GRPC) peer(ctx context.Context, neighbor string) (*api.Peer, error) {
	stream, err := g.client.ListPeer(ctx, &api.ListPeerRequest{Address: neighbor})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", neighbor, err)
	}
	var found *api.Peer
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", neighbor, err)
		}
		found = r.Peer
	}
	if found == nil {
		return nil, fmt.Errorf("no neighbor %s", neighbor)
	}
	return found, nil
}

// Established reports whether the session with neighbor is established.
func (g *GRPC) Established(ctx context.Context, neighbor string) (bool, error) {
	p, err := g.peer(ctx, neighbor)
	if err != nil {
		return false, fmt.Errorf("gobgpd %s: %w", g.Addr, err)
	}
	return p.GetState().GetSessionState() == api.PeerState_ESTABLISHED, nil
}

// EnablePeer lets the session come back up.
func (g *GRPC) EnablePeer(ctx context.Context, neighbor string) error {
	err := settle(ctx, api.PeerState_UP, func() error {
		_, err := g.client.EnablePeer(ctx, &api.EnablePeerRequest{Address: neighbor})
		return err
	}, func() (api.PeerState_AdminState, error) { return g.admin(ctx, neighbor) })
	if err != nil {
		return fmt.Errorf("gobgpd %s: enable %s: %w", g.Addr, neighbor, err)
	}
	return nil
}

// Router announces and withdraws prefixes: a drained data center's anycast
// routes.
type Router interface {
	Announce(ctx context.Context, prefix netip.Prefix, nexthop netip.Addr) error
	Withdraw(ctx context.Context, prefix netip.Prefix, nexthop netip.Addr) error
}

func apiPath(prefix netip.Prefix, nexthop netip.Addr, withdraw bool) (*api.Path, error) {
	var nlri bgp.AddrPrefixInterface
	if prefix.Addr().Is4() {
		nlri = bgp.NewIPAddrPrefix(uint8(prefix.Bits()), prefix.Addr().String())
	} else {
		nlri = bgp.NewIPv6AddrPrefix(uint8(prefix.Bits()), prefix.Addr().String())
	}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP)}
	if prefix.Addr().Is4() {
		attrs = append(attrs, bgp.NewPathAttributeNextHop(nexthop.String()))
	} else {
		attrs = append(attrs, bgp.NewPathAttributeMpReachNLRI(nexthop.String(), []bgp.AddrPrefixInterface{nlri}))
	}
	p, err := apiutil.NewPath(nlri, withdraw, attrs, time.Now())
	if err != nil {
		return nil, fmt.Errorf("gobgp: path %s: %w", prefix, err)
	}
	return p, nil
}

// Announce adds prefix to the global table.
func (e Embedded) Announce(ctx context.Context, prefix netip.Prefix, nexthop netip.Addr) error {
	p, err := apiPath(prefix, nexthop, false)
	if err != nil {
		return err
	}
	if _, err := e.S.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("gobgp: announce %s: %w", prefix, err)
	}
	return nil
}

// Withdraw removes prefix from the global table.
func (e Embedded) Withdraw(ctx context.Context, prefix netip.Prefix, nexthop netip.Addr) error {
	p, err := apiPath(prefix, nexthop, true)
	if err != nil {
		return err
	}
	if err := e.S.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("gobgp: withdraw %s: %w", prefix, err)
	}
	return nil
}

// Announce adds prefix to gobgpd's global table.
func (g *GRPC) Announce(ctx context.Context, prefix netip.Prefix, nexthop netip.Addr) error {
	p, err := apiPath(prefix, nexthop, false)
	if err != nil {
		return err
	}
	if _, err := g.client.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("gobgpd %s: announce %s: %w", g.Addr, prefix, err)
	}
	return nil
}

// Withdraw removes prefix from gobgpd's global table.
func (g *GRPC) Withdraw(ctx context.Context, prefix netip.Prefix, nexthop netip.Addr) error {
	p, err := apiPath(prefix, nexthop, true)
	if err != nil {
		return err
	}
	if _, err := g.client.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("gobgpd %s: withdraw %s: %w", g.Addr, prefix, err)
	}
	return nil
}
