// Package bgptest stops the embedded gobgp speakers of tests without
// tripping a race inside gobgp itself.
package bgptest

import (
	"context"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
)

// drain is how long a deleted peer's receive loop is given to end: its
// session is already torn down, so it only finishes the message it may
// be reading.
const drain = 200 * time.Millisecond

// Stop stops s. gobgp's StopBgp resets the server's global configuration
// while the receive loop of a peer it is deconfiguring may still be
// reading an UPDATE in flight, which reads that configuration (the race
// detector reports it, gobgp v3.37: server.go StopBgp against fsm.go
// recvMessageWithError). So s's peers are deleted first, and their loops
// given a moment to end, before StopBgp.
func Stop(s *server.BgpServer) {
	ctx := context.Background()
	var peers []string
	_ = s.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		if p.Conf != nil {
			peers = append(peers, p.Conf.NeighborAddress)
		}
	})
	for _, a := range peers {
		_ = s.DeletePeer(ctx, &api.DeletePeerRequest{Address: a})
	}
	if len(peers) > 0 {
		time.Sleep(drain)
	}
	_ = s.StopBgp(ctx, &api.StopBgpRequest{})
}
