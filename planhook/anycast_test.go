package planhook

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/internal/bgptest"
)

type quiet struct{}

func (quiet) Panic(string, gobgplog.Fields) {}
func (quiet) Fatal(string, gobgplog.Fields) {}
func (quiet) Error(string, gobgplog.Fields) {}
func (quiet) Warn(string, gobgplog.Fields)  {}
func (quiet) Info(string, gobgplog.Fields)  {}
func (quiet) Debug(string, gobgplog.Fields) {}
func (quiet) SetLevel(gobgplog.LogLevel)    {}
func (quiet) GetLevel() gobgplog.LogLevel   { return gobgplog.ErrorLevel }

func speaker(t *testing.T, asn uint32, id string, port int32, addrs []string) *server.BgpServer {
	s := server.NewBgpServer(server.LoggerOption(quiet{}))
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: asn, RouterId: id, ListenPort: port, ListenAddresses: addrs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bgptest.Stop(s) })
	return s
}

// prefixes lists what s's table holds from its peers.
func prefixes(t *testing.T, s *server.BgpServer) []string {
	var out []string
	err := s.ListPath(context.Background(), &api.ListPathRequest{TableType: api.TableType_GLOBAL,
		Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}}, func(d *api.Destination) {
		out = append(out, d.Prefix)
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func waitPrefixes(t *testing.T, s *server.BgpServer, want []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !slices.Equal(prefixes(t, s), want) {
		if time.Now().After(deadline) {
			t.Fatalf("upstream table %v, want %v", prefixes(t, s), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// EWR's edge speaker announces its anycast prefix to an upstream router
// over loopback; the scenario's whole-EWR loss withdraws it (the upstream's
// table loses it) and EWR's return announces it again.
func TestAnycastWithdrawal(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	edge := speaker(t, 64500, "192.0.2.1", int32(port), []string{"127.0.4.1"})
	up := speaker(t, 64501, "192.0.2.2", -1, nil)
	ctx := context.Background()
	if err := edge.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{Conf: &api.PeerConf{NeighborAddress: "127.0.4.2", PeerAsn: 64501},
		Transport: &api.Transport{PassiveMode: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := up.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{Conf: &api.PeerConf{NeighborAddress: "127.0.4.1", PeerAsn: 64500},
		Transport: &api.Transport{LocalAddress: "127.0.4.2", RemotePort: uint32(port)},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}}}}); err != nil {
		t.Fatal(err)
	}
	router := actions.Embedded{S: edge}
	site := AnycastSite{Router: router, Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, NextHop: netip.MustParseAddr("127.0.4.1")}
	if err := router.Announce(ctx, site.Prefixes[0], site.NextHop); err != nil {
		t.Fatal(err)
	}
	// A second, unrelated prefix stays put throughout.
	if err := router.Announce(ctx, netip.MustParsePrefix("203.0.113.0/24"), site.NextHop); err != nil {
		t.Fatal(err)
	}
	waitPrefixes(t, up, []string{"198.51.100.0/24", "203.0.113.0/24"})

	ins, _ := inputs(t)
	d := &Driver{Mode: "enforce", Publishers: []Publisher{&Anycast{Sites: map[string]AnycastSite{"EWR": site}}}}
	for i, in := range ins {
		m, err := d.Tick(ctx, time.Unix(int64(i)*300, 0), in)
		if err != nil {
			t.Fatalf("tick %d: %v", i, err)
		}
		switch i {
		case 3:
			if !slices.Contains(changeList(m), "withdraw EWR") {
				t.Fatalf("tick 3 changes %v", changeList(m))
			}
			waitPrefixes(t, up, []string{"203.0.113.0/24"})
		case 4:
			if !slices.Contains(changeList(m), "announce EWR") {
				t.Fatalf("tick 4 changes %v", changeList(m))
			}
			waitPrefixes(t, up, []string{"198.51.100.0/24", "203.0.113.0/24"})
		}
	}
}

func changeList(m *Message) []string {
	if m == nil {
		return nil
	}
	var s []string
	for _, c := range m.Changes {
		s = append(s, c.String())
	}
	return s
}
