package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/bgptest"
)

// notes is a gobgp logger that keeps the shutdown communications a speaker
// receives, by neighbour.
type notes struct {
	mu    sync.Mutex
	comms map[string][]string
}

func (c *notes) Warn(msg string, f gobgplog.Fields) {
	if msg != "received notification" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := f["Communicated-Reason"].(string); ok {
		k := fmt.Sprint(f["Key"])
		c.comms[k] = append(c.comms[k], r)
	}
}
func (c *notes) Panic(string, gobgplog.Fields) {}
func (c *notes) Fatal(string, gobgplog.Fields) {}
func (c *notes) Error(string, gobgplog.Fields) {}
func (c *notes) Info(string, gobgplog.Fields)  {}
func (c *notes) Debug(string, gobgplog.Fields) {}
func (c *notes) SetLevel(gobgplog.LogLevel)    {}
func (c *notes) GetLevel() gobgplog.LogLevel   { return gobgplog.WarnLevel }

func speaker(t *testing.T, asn uint32, id string, port int32, addrs []string, opts ...server.ServerOption) *server.BgpServer {
	t.Helper()
	s := server.NewBgpServer(opts...)
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: asn, RouterId: id, ListenPort: port, ListenAddresses: addrs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bgptest.Stop(s) })
	return s
}

// sessions lists the edge's neighbours by state: "127.0.1.11 up" when
// established, "127.0.1.11 down" otherwise, sorted.
func sessions(t *testing.T, edge *server.BgpServer) []string {
	t.Helper()
	var out []string
	if err := edge.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) {
		st := "down"
		if p.State.SessionState == api.PeerState_ESTABLISHED {
			st = "up"
		}
		out = append(out, p.Conf.NeighborAddress+" "+st)
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func waitSessions(t *testing.T, edge *server.BgpServer, want []string) {
	t.Helper()
	for i := 0; !slices.Equal(sessions(t, edge), want); i++ {
		if i > 1200 {
			t.Fatalf("sessions %v, want %v", sessions(t, edge), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The Telia incident in enforce mode, the service's sinks posting to
// actions serve over HTTP, and actions serve driving a gobgp speaker over
// its gRPC API: our edge (AS64500) has a session with Telia (AS1299) and
// one with Level 3 (AS3356) at each of ams01, fra01 and lon01, all on
// loopback. Once the 2019-06-17 08:35 and the 2019-06-20 12:15 alerts are
// delivered, the three Telia sessions are down and the Level 3 ones up;
// Telia's speaker got the shutdown communication naming the alert, each
// time; after each resolve and the hold the sessions come back; and each
// shutdown and restore is an alert event in the actions sink.
func TestTeliaEnforceFedLive(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OW_TEST_ACTIONS_SECRET", "s3cret")
	lab := newTeliaLab(t)
	edge, telia, sites, allUp, grpcAddr := lab.edge, lab.telia, lab.sites, lab.allUp, lab.grpc
	cfgSites := lab.cfgSites
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "actions.yaml")
	writeFile(t, cfg, fmt.Sprintf(`mode: enforce
rules: [transit-packet-loss]
cooldown: 30m
hold: 30m
gobgp: %s
audit: %s/actions.jsonl
serve:
  listen: %s
  secret_env: OW_TEST_ACTIONS_SECRET
  restore_every: 100ms
sinks:
  - {name: page, type: jsonl, path: %s/action-events.jsonl}
sites:
%s`, grpcAddr, dir, addr, dir, cfgSites))
	startServe(t, addr, "--config", cfg)

	// Between the alerts, live, days pass: after each resolve the hold
	// passes on the wall clock and the sessions come back before the next
	// alert is delivered.
	teliaDown := []string{"127.0.1.11 down", "127.0.1.12 down", "127.0.1.13 down", "127.0.2.21 up", "127.0.2.22 up", "127.0.2.23 up"}
	var seen []string
	replayTeliaThroughService(t, dir, addr, "", func(ev *alerting.Event) {
		if ev.Rule != "transit-packet-loss" {
			return
		}
		seen = append(seen, ev.At.Format("01-02T15:04")+" "+ev.Status)
		switch ev.Status {
		case alerting.Firing:
			if got := sessions(t, edge); !slices.Equal(got, teliaDown) {
				t.Errorf("after the %s alert: sessions %v, want %v", ev.At.Format(time.RFC3339), got, teliaDown)
			}
		case alerting.Resolved:
			waitSessions(t, edge, allUp)
		}
	})
	if got := strings.Join(seen, ", "); got != "06-17T08:35 firing, 06-17T09:25 resolved, 06-20T12:15 firing, 06-20T12:45 resolved" {
		t.Fatalf("transit-packet-loss alerts delivered: %s", got)
	}

	alertID := alerting.AlertID("transit-packet-loss", "packet_loss", "transit:1299")
	for i, site := range sites {
		n := fmt.Sprintf("127.0.0.%d", 11+i)
		msg := fmt.Sprintf("outagewatch: packet loss via AS1299 at %s, alert %s", site, alertID)
		telia.mu.Lock()
		got := telia.comms[n]
		telia.mu.Unlock()
		if !slices.Equal(got, []string{msg, msg}) {
			t.Errorf("Telia's speaker got from %s: %q, want the communication twice", n, got)
		}
	}
	var want []string
	for _, p := range []struct{ at, op string }{{"06-17T08:35", "shutdown"}, {"06-17T09:25", "loss-resolved"}, {"06-17T09:55", "restore"},
		{"06-20T12:15", "shutdown"}, {"06-20T12:45", "loss-resolved"}, {"06-20T13:15", "restore"}} {
		for _, site := range sites {
			want = append(want, fmt.Sprintf("%s enforce %s AS1299 %s", p.at, p.op, site))
		}
	}
	if got := auditLines(t, addr); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var wantEvs []string
	for _, p := range []struct{ at, status string }{{"06-17T08:35", "firing"}, {"06-17T09:55", "resolved"}, {"06-20T12:15", "firing"}, {"06-20T13:15", "resolved"}} {
		for _, site := range sites {
			e := "transit:1299@" + site
			wantEvs = append(wantEvs, fmt.Sprintf("%s alert transit-shutdown %s %s %s", p.at, p.status, e, alerting.AlertID(actions.RuleShutdown, "packet_loss", e)))
		}
	}
	if evs := actionEvents(t, filepath.Join(dir, "action-events.jsonl"), 12); strings.Join(evs, "\n") != strings.Join(wantEvs, "\n") {
		t.Fatalf("action events:\n%s\nwant:\n%s", strings.Join(evs, "\n"), strings.Join(wantEvs, "\n"))
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// teliaLab is our edge speaker (AS64500, gRPC API on grpc) with a session
// to Telia (AS1299, 127.0.1.1x) and one to Level 3 (AS3356, 127.0.2.2x) at
// each of ams01, fra01 and lon01, all on loopback and established;
// cfgSites is the actions configuration's sites block for them.
type teliaLab struct {
	edge     *server.BgpServer
	telia    *notes
	sites    []string
	allUp    []string
	grpc     string
	cfgSites string
}

func newTeliaLab(t *testing.T) *teliaLab {
	t.Helper()
	sites := []string{"ams01", "fra01", "lon01"}
	var ours []string
	for i := range sites {
		ours = append(ours, fmt.Sprintf("127.0.0.%d", 11+i), fmt.Sprintf("127.0.0.%d", 21+i))
	}
	grpcAddr := freeAddr(t)
	var port int32
	fmt.Sscan(freeAddr(t)[len("127.0.0.1:"):], &port)
	quiet := func() server.ServerOption { return server.LoggerOption(&notes{comms: map[string][]string{}}) }
	telia := &notes{comms: map[string][]string{}}
	edge := speaker(t, 64500, "192.0.2.1", port, ours, quiet(), server.GrpcListenAddress(grpcAddr))
	teliaSp := speaker(t, 1299, "198.51.100.1", -1, nil, server.LoggerOption(telia))
	level3 := speaker(t, 3356, "198.51.100.2", -1, nil, quiet())
	ctx := context.Background()
	var cfgSites strings.Builder
	var allUp []string
	for i, site := range sites {
		fmt.Fprintf(&cfgSites, "  %s:\n    transits:\n      - {asn: 1299, name: Telia, sessions: [127.0.1.%d]}\n      - {asn: 3356, name: Level 3, sessions: [127.0.2.%d]}\n", site, 11+i, 21+i)
		for _, tr := range []struct {
			s              *server.BgpServer
			asn            uint32
			ourIP, theirIP string
		}{
			{teliaSp, 1299, fmt.Sprintf("127.0.0.%d", 11+i), fmt.Sprintf("127.0.1.%d", 11+i)},
			{level3, 3356, fmt.Sprintf("127.0.0.%d", 21+i), fmt.Sprintf("127.0.2.%d", 21+i)},
		} {
			allUp = append(allUp, tr.theirIP+" up")
			timers := &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, IdleHoldTimeAfterReset: 1}}
			if err := edge.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{Conf: &api.PeerConf{NeighborAddress: tr.theirIP, PeerAsn: tr.asn},
				Transport: &api.Transport{PassiveMode: true}, Timers: timers}}); err != nil {
				t.Fatal(err)
			}
			if err := tr.s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{Conf: &api.PeerConf{NeighborAddress: tr.ourIP, PeerAsn: 64500},
				Transport: &api.Transport{LocalAddress: tr.theirIP, RemotePort: uint32(port)}, Timers: timers}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sort.Strings(allUp)
	waitSessions(t, edge, allUp)
	return &teliaLab{edge: edge, telia: telia, sites: sites, allUp: allUp, grpc: grpcAddr, cfgSites: cfgSites.String()}
}
