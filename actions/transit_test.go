package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/apiutil"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/bgptest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

var (
	teliaOnce   sync.Once
	teliaEvents []alerting.Event
	teliaErr    error
)

// teliaAlerts replays the bundled Telia fixture through the pipeline and
// returns its alert events, read back from JSON as a sink sees them.
func teliaAlerts(t *testing.T) []alerting.Event {
	t.Helper()
	teliaOnce.Do(func() {
		spec, err := scenario.Load("../fixtures/telia-2019-06-20.yaml")
		if err != nil {
			teliaErr = err
			return
		}
		srcs, err := replay.RenderSpec(spec)
		if err != nil {
			teliaErr = err
			return
		}
		p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs}, func(ev *alerting.Event) {
			b, _ := json.Marshal(ev)
			var e alerting.Event
			if err := json.Unmarshal(b, &e); err == nil && e.Detector == "packet_loss" {
				teliaEvents = append(teliaEvents, e)
			}
		})
		if err != nil {
			teliaErr = err
			return
		}
		teliaErr = replay.Run(p, srcs, nil)
	})
	if teliaErr != nil {
		t.Fatal(teliaErr)
	}
	return teliaEvents
}

// capture is a gobgp logger that keeps the shutdown communications the
// speaker receives, by neighbour.
type capture struct {
	mu    sync.Mutex
	comms map[string][]string
}

func (c *capture) Warn(msg string, f gobgplog.Fields) {
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
func (c *capture) Panic(string, gobgplog.Fields) {}
func (c *capture) Fatal(string, gobgplog.Fields) {}
func (c *capture) Error(string, gobgplog.Fields) {}
func (c *capture) Info(string, gobgplog.Fields)  {}
func (c *capture) Debug(string, gobgplog.Fields) {}
func (c *capture) SetLevel(gobgplog.LogLevel)    {}
func (c *capture) GetLevel() gobgplog.LogLevel   { return gobgplog.WarnLevel }
func (c *capture) got(neighbor string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.comms[neighbor])
}

// lab is our edge speaker (AS64500) with sessions to Telia (AS1299) and
// Level 3 (AS3356) at three sites, each transit a speaker of its own, all
// over loopback. Session i of a transit: our side 127.0.0.x, theirs
// 127.0.1.x (Telia) or 127.0.2.x (Level 3).
type lab struct {
	edge, telia, level3 *server.BgpServer
	teliaLog            *capture
	sites               []string
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startSpeaker(t *testing.T, asn uint32, id string, port int32, addrs []string, opts ...server.ServerOption) *server.BgpServer {
	s := server.NewBgpServer(opts...)
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: asn, RouterId: id, ListenPort: port, ListenAddresses: addrs}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bgptest.Stop(s) })
	return s
}

func announce(t *testing.T, s *server.BgpServer, prefix, nexthop string) {
	ip, plen, _ := strings.Cut(prefix, "/")
	var n int
	fmt.Sscan(plen, &n)
	path, err := apiutil.NewPath(bgp.NewIPAddrPrefix(uint8(n), ip), false,
		[]bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), bgp.NewPathAttributeNextHop(nexthop)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddPath(context.Background(), &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: path}); err != nil {
		t.Fatal(err)
	}
}

func newLab(t *testing.T) *lab {
	sites := []string{"ams01", "fra01", "lon01"}
	port := int32(freePort(t))
	var ours []string
	for i := range sites {
		ours = append(ours, fmt.Sprintf("127.0.0.%d", 11+i), fmt.Sprintf("127.0.0.%d", 21+i))
	}
	l := &lab{sites: sites, teliaLog: &capture{comms: map[string][]string{}}}
	quiet := func() server.ServerOption { return server.LoggerOption(&capture{comms: map[string][]string{}}) }
	l.edge = startSpeaker(t, 64500, "192.0.2.1", port, ours, quiet())
	l.telia = startSpeaker(t, 1299, "198.51.100.1", -1, nil, server.LoggerOption(l.teliaLog))
	l.level3 = startSpeaker(t, 3356, "198.51.100.2", -1, nil, quiet())
	ctx := context.Background()
	for i := range sites {
		for _, tr := range []struct {
			s       *server.BgpServer
			asn     uint32
			ourIP   string
			theirIP string
		}{
			{l.telia, 1299, fmt.Sprintf("127.0.0.%d", 11+i), fmt.Sprintf("127.0.1.%d", 11+i)},
			{l.level3, 3356, fmt.Sprintf("127.0.0.%d", 21+i), fmt.Sprintf("127.0.2.%d", 21+i)},
		} {
			if err := l.edge.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
				Conf:      &api.PeerConf{NeighborAddress: tr.theirIP, PeerAsn: tr.asn},
				Transport: &api.Transport{PassiveMode: true},
				Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, IdleHoldTimeAfterReset: 1}},
			}}); err != nil {
				t.Fatal(err)
			}
			if err := tr.s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
				Conf:      &api.PeerConf{NeighborAddress: tr.ourIP, PeerAsn: 64500},
				Transport: &api.Transport{LocalAddress: tr.theirIP, RemotePort: uint32(port)},
				Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, IdleHoldTimeAfterReset: 1}},
			}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	announce(t, l.edge, "192.0.2.0/24", "192.0.2.1")
	announce(t, l.telia, "203.0.113.0/24", "198.51.100.1")
	l.waitEstablished(t, 6)
	l.waitRoutes(t, []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"})
	return l
}

// waitFor polls cond until it holds; BGP sessions take a second or two to
// come up over loopback. The deadline only stops a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// established lists the edge's established neighbours.
func (l *lab) established(t *testing.T) []string {
	var up []string
	err := l.edge.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) {
		if p.State.SessionState == api.PeerState_ESTABLISHED {
			up = append(up, p.Conf.NeighborAddress)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(up)
	return up
}

func (l *lab) waitEstablished(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d established sessions", n), func() bool { return len(l.established(t)) == n })
}

// teliaRoutes lists the neighbours Telia's table has our prefix from.
func (l *lab) teliaRoutes(t *testing.T) []string {
	var from []string
	err := l.telia.ListPath(context.Background(), &api.ListPathRequest{TableType: api.TableType_GLOBAL,
		Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}}, func(d *api.Destination) {
		if d.Prefix != "192.0.2.0/24" {
			return
		}
		for _, p := range d.Paths {
			from = append(from, p.NeighborIp)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(from)
	return from
}

func (l *lab) waitRoutes(t *testing.T, want []string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("Telia's table to hold our prefix from %v", want), func() bool {
		return slices.Equal(l.teliaRoutes(t), want)
	})
}

func (l *lab) config(t *testing.T, mode string, lon01TeliaOnly bool) *Config {
	y := fmt.Sprintf(`mode: %s
rules: [transit-packet-loss]
cooldown: 30m
hold: 30m
sites:
  ams01:
    transits:
      - {asn: 1299, name: Telia, sessions: [127.0.1.11]}
      - {asn: 3356, name: Level 3, sessions: [127.0.2.21]}
  fra01:
    transits:
      - {asn: 1299, name: Telia, sessions: [127.0.1.12]}
      - {asn: 3356, name: Level 3, sessions: [127.0.2.22]}
  lon01:
    transits:
      - {asn: 1299, name: Telia, sessions: [127.0.1.13]}
`, mode)
	if !lon01TeliaOnly {
		y += "      - {asn: 3356, name: Level 3, sessions: [127.0.2.23]}\n"
	}
	c, err := ParseConfig("test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (l *lab) speakers() map[string]Speaker {
	m := map[string]Speaker{}
	for _, s := range l.sites {
		m[s] = Embedded{l.edge}
	}
	return m
}

var all6 = []string{"127.0.1.11", "127.0.1.12", "127.0.1.13", "127.0.2.21", "127.0.2.22", "127.0.2.23"}

func TestTeliaEnforce(t *testing.T) {
	evs := teliaAlerts(t)
	if len(evs) != 4 || evs[2].Status != alerting.Firing || evs[2].At.Format(time.RFC3339) != "2019-06-20T12:15:00Z" {
		t.Fatalf("Telia fixture alerts: %+v", evs)
	}
	l := newLab(t)
	var emitted []alerting.Event
	tr, err := NewTransits(l.config(t, ModeEnforce, false), l.speakers(), nil, func(ev *alerting.Event) { emitted = append(emitted, *ev) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for round, ev := range [][2]alerting.Event{{evs[0], evs[1]}, {evs[2], evs[3]}} {
		fire, resolve := ev[0], ev[1]
		if err := tr.Send(ctx, &fire); err != nil {
			t.Fatal(err)
		}
		// Telia's three sessions down, Level 3's up; Telia saw why and our
		// prefix left its table.
		l.waitEstablished(t, 3)
		if got := l.established(t); !slices.Equal(got, all6[3:]) {
			t.Fatalf("round %d: established %v, want only Level 3", round, got)
		}
		l.waitRoutes(t, nil)
		for i, site := range l.sites {
			want := fmt.Sprintf("outagewatch: packet loss via AS1299 at %s, alert %s", site, fire.ID)
			if got := l.teliaLog.got(fmt.Sprintf("127.0.0.%d", 11+i)); len(got) != round+1 || got[round] != want {
				t.Fatalf("round %d: Telia received %q at %s, want %q", round, got, site, want)
			}
		}
		// Resolved: held for 30 minutes, not back at 29.
		if err := tr.Send(ctx, &resolve); err != nil {
			t.Fatal(err)
		}
		if err := tr.Advance(ctx, resolve.At.Add(29*time.Minute)); err != nil {
			t.Fatal(err)
		}
		recs, _ := tr.Records()
		for _, r := range recs {
			if r.Op == OpRestore && r.Time.After(fire.At) {
				t.Fatalf("round %d: restored before the hold: %+v", round, r)
			}
		}
		// The peer's admin state is what an early EnablePeer would change
		// at once (the session itself takes a second to come back).
		err := l.edge.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
			if strings.HasPrefix(p.Conf.NeighborAddress, "127.0.1.") && p.State.AdminState != api.PeerState_DOWN {
				t.Errorf("round %d: %s admin state %v before the hold", round, p.Conf.NeighborAddress, p.State.AdminState)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Advance(ctx, resolve.At.Add(30*time.Minute)); err != nil {
			t.Fatal(err)
		}
		l.waitEstablished(t, 6)
		l.waitRoutes(t, []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"})
	}
	recs, _ := tr.Records()
	var ops []string
	for _, r := range recs {
		if r.Op == OpLossResolved {
			continue
		}
		ops = append(ops, fmt.Sprintf("%s %s %s AS%d %s", r.Time.Format("01-02T15:04"), r.Mode, r.Op, r.ASN, r.Site))
	}
	want := []string{
		"06-17T08:35 enforce shutdown AS1299 ams01", "06-17T08:35 enforce shutdown AS1299 fra01", "06-17T08:35 enforce shutdown AS1299 lon01",
		"06-17T09:55 enforce restore AS1299 ams01", "06-17T09:55 enforce restore AS1299 fra01", "06-17T09:55 enforce restore AS1299 lon01",
		"06-20T12:15 enforce shutdown AS1299 ams01", "06-20T12:15 enforce shutdown AS1299 fra01", "06-20T12:15 enforce shutdown AS1299 lon01",
	}
	if !slices.Equal(ops[:9], want) || len(ops) != 12 {
		t.Fatalf("audit:\n%s", strings.Join(ops, "\n"))
	}
	// Each action is an alert event: a shutdown fires, its restore resolves
	// the same ID.
	if len(emitted) != 12 || emitted[0].Status != alerting.Firing || emitted[3].Status != alerting.Resolved || emitted[0].ID != emitted[3].ID ||
		emitted[0].Entity != "transit:1299@ams01" || emitted[0].Details["undo"] != "outagewatch actions undo "+recs[0].ID {
		t.Fatalf("emitted %+v", emitted[:4])
	}
}

func TestTeliaDryRunChangesNothing(t *testing.T) {
	evs := teliaAlerts(t)
	l := newLab(t)
	var emitted []alerting.Event
	// No speakers at all: dry-run must not need them.
	tr, err := NewTransits(l.config(t, ModeDryRun, false), nil, nil, func(ev *alerting.Event) { emitted = append(emitted, *ev) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range evs {
		if err := tr.Send(ctx, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Advance(ctx, evs[3].At.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := l.established(t); !slices.Equal(got, all6) {
		t.Fatalf("dry-run changed sessions: %v", got)
	}
	if got := l.teliaRoutes(t); len(got) != 3 || len(l.teliaLog.got("127.0.0.11")) != 0 {
		t.Fatalf("dry-run changed Telia's view: routes %v", got)
	}
	if len(emitted) != 12 {
		t.Fatalf("%d events, want 12 (3 shut and 3 restored, twice)", len(emitted))
	}
	// With no clock but the alerts', the first episode's restores were
	// carried out when the next alert came (06-20 12:15), the second's at
	// the last check (13:45): each record says so beside when it fell due
	// (the resolve and the 30-minute hold).
	recs, _ := tr.Records()
	var restores []string
	for _, r := range recs {
		if r.Op == OpRestore {
			restores = append(restores, r.Time.Format("01-02T15:04")+" made "+r.Made.Format("01-02T15:04"))
		}
	}
	if want := []string{"06-17T09:55 made 06-20T12:15", "06-17T09:55 made 06-20T12:15", "06-17T09:55 made 06-20T12:15",
		"06-20T13:15 made 06-20T13:45", "06-20T13:15 made 06-20T13:45", "06-20T13:15 made 06-20T13:45"}; !slices.Equal(restores, want) {
		t.Fatalf("restores %v, want %v", restores, want)
	}
	if s := emitted[0].Summary; !strings.HasPrefix(s, "dry-run: would have shut AS1299 Telia at ams01 (1 session): packet loss through AS1299") {
		t.Fatalf("summary %q", s)
	}
}

func TestGuardrails(t *testing.T) {
	evs := teliaAlerts(t)
	l := newLab(t)
	ctx := context.Background()
	tr, err := NewTransits(l.config(t, ModeEnforce, true), l.speakers(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	tr.Counter = NewCounter(reg)
	now := evs[2].At
	tr.Now = func() time.Time { return now }
	fire := evs[2]
	if err := tr.Send(ctx, &fire); err != nil {
		t.Fatal(err)
	}
	// lon01 has only Telia: it stays up; ams01 and fra01 go down.
	l.waitEstablished(t, 4)
	if got := l.established(t); !slices.Equal(got, []string{"127.0.1.13", "127.0.2.21", "127.0.2.22", "127.0.2.23"}) {
		t.Fatalf("established %v", got)
	}
	recs, _ := tr.Records()
	if len(recs) != 3 || recs[2].Op != OpRefused || recs[2].Site != "lon01" || recs[2].Why != "AS1299 is the last transit up at lon01" {
		t.Fatalf("records %+v", recs)
	}
	// Level 3 is now the last transit up at ams01.
	l3 := alerting.Event{ID: "l3", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss", Entity: "transit:3356@ams01", At: now}
	if err := tr.Send(ctx, &l3); err != nil {
		t.Fatal(err)
	}
	recs, _ = tr.Records()
	if r := recs[len(recs)-1]; r.Op != OpRefused || r.Why != "AS3356 is the last transit up at ams01" {
		t.Fatalf("last record %+v", r)
	}
	// Undo restores ams01 by hand.
	undo, err := tr.Undo(ctx, recs[0].ID, "alice")
	if err != nil || undo.Who != "alice" || undo.Of != recs[0].ID || undo.Site != "ams01" {
		t.Fatalf("undo %+v %v", undo, err)
	}
	l.waitEstablished(t, 5)
	l.waitRoutes(t, []string{"127.0.0.11", "127.0.0.13"})
	if _, err := tr.Undo(ctx, recs[0].ID, "alice"); err == nil || !strings.Contains(err.Error(), "already restored") {
		t.Fatalf("second undo: %v", err)
	}
	// Cool-down: the alert firing again ten minutes after the undo does not
	// shut ams01 again.
	now = now.Add(10 * time.Minute)
	again := evs[2]
	again.At = now
	if err := tr.Send(ctx, &again); err != nil {
		t.Fatal(err)
	}
	recs, _ = tr.Records()
	if r := recs[len(recs)-2]; r.Op != OpRefused || r.Site != "ams01" || !strings.HasPrefix(r.Why, "cool-down: last action 10m0s ago") {
		t.Fatalf("record %+v", r)
	}
	// Override: keep fra01's Telia up. It comes back now and a later alert
	// does not touch it.
	if _, err := tr.Override(ctx, "fra01", 1299, "up", "bob"); err != nil {
		t.Fatal(err)
	}
	l.waitEstablished(t, 6)
	now = now.Add(2 * time.Hour)
	again.At = now
	if err := tr.Send(ctx, &again); err != nil {
		t.Fatal(err)
	}
	recs, _ = tr.Records()
	var last []string
	for _, r := range recs[len(recs)-3:] {
		last = append(last, r.Op+" "+r.Site+": "+r.Why)
	}
	want := []string{
		"shutdown ams01: " + evs[2].Summary,
		"refused fra01: manual override keeps it up",
		"refused lon01: AS1299 is the last transit up at lon01",
	}
	if !slices.Equal(last, want) {
		t.Fatalf("last records:\n%s", strings.Join(last, "\n"))
	}
	// Shut ams01, fra01, then ams01 again; restored ams01 (undo) and fra01
	// (override); refused lon01 three times (last transit), Level 3 at
	// ams01, ams01 in its cool-down, fra01 under the override.
	for op, want := range map[string]float64{OpShutdown: 3, OpRestore: 2, OpRefused: 6} {
		if got := testutil.ToFloat64(tr.Counter.WithLabelValues(op, ModeEnforce)); got != want {
			t.Errorf("outagewatch_actions_total{op=%q} = %v, want %v", op, got, want)
		}
	}
	l.waitEstablished(t, 5)
}

// At most max_down_per_site transits down at one site, even when others
// are still up; dry-run keeps the same books without a speaker.
func TestMaxDownPerSite(t *testing.T) {
	c, err := ParseConfig("t.yaml", []byte(`mode: dry-run
max_down_per_site: 1
sites:
  ams01:
    transits:
      - {asn: 1299, sessions: [192.0.2.11]}
      - {asn: 3356, sessions: [192.0.2.12]}
      - {asn: 174, sessions: [192.0.2.13]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransits(c, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)
	for _, asn := range []string{"1299", "3356"} {
		ev := alerting.Event{ID: asn, Status: alerting.Firing, Detector: "packet_loss", Entity: "transit:" + asn + "@ams01", At: at}
		if err := tr.Send(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := tr.Records()
	if len(recs) != 2 || recs[0].Op != OpShutdown || recs[0].Mode != ModeDryRun || recs[1].Op != OpRefused || recs[1].Why != "1 transit(s) already down at ams01, limit 1" {
		t.Fatalf("records %+v", recs)
	}
}

// The gRPC speaker drives gobgpd's API: here an embedded server with its
// gRPC listener on, as gobgpd runs it.
func TestGRPCSpeaker(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := startSpeaker(t, 64500, "192.0.2.1", -1, nil, server.GrpcListenAddress(addr), server.LoggerOption(&capture{comms: map[string][]string{}}))
	ctx := context.Background()
	if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{Conf: &api.PeerConf{NeighborAddress: "127.0.3.1", PeerAsn: 1299},
		Transport: &api.Transport{PassiveMode: true}}}); err != nil {
		t.Fatal(err)
	}
	g, err := DialGoBGP(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	admin := func() api.PeerState_AdminState {
		var st api.PeerState_AdminState = -1
		_ = s.ListPeer(ctx, &api.ListPeerRequest{Address: "127.0.3.1"}, func(p *api.Peer) { st = p.State.AdminState })
		return st
	}
	var err2 error
	waitFor(t, "gobgp gRPC API", func() bool { err2 = g.DisablePeer(ctx, "127.0.3.1", "outagewatch: test"); return err2 == nil })
	if got := admin(); got != api.PeerState_DOWN {
		t.Fatalf("admin state %v after disable", got)
	}
	if err := g.EnablePeer(ctx, "127.0.3.1"); err != nil {
		t.Fatal(err)
	}
	if got := admin(); got != api.PeerState_UP {
		t.Fatalf("admin state %v after enable", got)
	}
	if err := g.DisablePeer(ctx, "127.0.3.99", "x"); err == nil || !strings.Contains(err.Error(), "127.0.3.99") {
		t.Fatalf("unknown neighbour: %v", err)
	}
	// The passive peer never connects: not established.
	if up, err := g.Established(ctx, "127.0.3.1"); err != nil || up {
		t.Fatalf("established %v %v", up, err)
	}
	if _, err := g.Established(ctx, "127.0.3.99"); err == nil || !strings.Contains(err.Error(), "no neighbor 127.0.3.99") {
		t.Fatalf("unknown neighbour: %v", err)
	}
}

// The hold survives a restart: the loss resolved before it, the restore
// comes from the new process once the hold has passed.
func TestHoldSurvivesRestart(t *testing.T) {
	open := restartable(t)
	at := time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)
	ev := alerting.Event{ID: "loss", Status: alerting.Firing, Detector: "packet_loss", Entity: "transit:1299@ams01", At: at}
	first := open(nil)
	ctx := context.Background()
	if err := first.Send(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	// Resolved, back, resolved again: the hold runs from the last resolve.
	for i, st := range []string{alerting.Resolved, alerting.Firing, alerting.Resolved} {
		e := ev
		e.Status, e.At = st, at.Add(time.Duration(10*(i+1))*time.Minute)
		if err := first.Send(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	second := open(nil)
	if err := second.Advance(ctx, at.Add(30*time.Minute+29*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := second.Advance(ctx, at.Add(60*time.Minute)); err != nil {
		t.Fatal(err)
	}
	recs, _ := second.Records()
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Time.Format("15:04"))
	}
	want := []string{"shutdown 12:15", "loss-resolved 12:25", "loss-back 12:35", "loss-resolved 12:45", "restore 13:15"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit %v, want %v", got, want)
	}
}

// A transit shut by an alert whose rule then leaves the rules (or has its
// actions turned off) comes back after the hold once that alert
// resolves: the rule's mode no longer lets its alerts act, but the
// resolve of the alert that made the shutdown still ends it. A new firing
// of that rule shuts nothing.
func TestResolveOfARuleNoLongerActing(t *testing.T) {
	open := restartable(t)
	at := time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)
	ctx := context.Background()
	ev := alerting.Event{ID: "loss", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss", Entity: "transit:1299@ams01", At: at}
	if err := open(map[string]string{"transit-packet-loss": ModeDryRun}).Send(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	// Restarted with the rule gone from the rules.
	second := open(map[string]string{})
	res := ev
	res.Status, res.Reason, res.At = alerting.Resolved, "rule_removed", at.Add(10*time.Minute)
	again := ev
	again.ID, again.Entity, again.At = "loss-3356", "transit:3356@ams01", at.Add(15*time.Minute)
	for _, e := range []*alerting.Event{&res, &again} {
		if err := second.Send(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.Advance(ctx, at.Add(40*time.Minute)); err != nil {
		t.Fatal(err)
	}
	recs, _ := second.Records()
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s AS%d %s", r.Op, r.ASN, r.Time.Format("15:04")))
	}
	want := []string{"shutdown AS1299 12:15", "loss-resolved AS1299 12:25", "restore AS1299 12:55"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit %v, want %v", got, want)
	}
}

// restartable returns an opener of Transits in dry-run, a 30-minute hold,
// AS1299 and AS3356 at ams01, all on one audit log: each call is the
// process started again, with modes as its RuleModes.
func restartable(t *testing.T) func(modes map[string]string) *Transits {
	path := t.TempDir() + "/audit.jsonl"
	cfg, err := ParseConfig("t.yaml", []byte(`mode: dry-run
hold: 30m
sites:
  ams01:
    transits:
      - {asn: 1299, sessions: [192.0.2.11]}
      - {asn: 3356, sessions: [192.0.2.12]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return func(modes map[string]string) *Transits {
		a, err := OpenAudit(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTransits(cfg, nil, a, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr.RuleModes = modes
		return tr
	}
}

// tripwire fails the test if anything reaches the speaker.
type tripwire struct{ t *testing.T }

func (w tripwire) DisablePeer(context.Context, string, string) error {
	w.t.Error("speaker called")
	return nil
}
func (w tripwire) EnablePeer(context.Context, string) error { w.t.Error("speaker called"); return nil }

// The rule's own actions setting caps the configuration's mode.
func TestRuleModesCap(t *testing.T) {
	cfg, err := ParseConfig("t.yaml", []byte(`mode: enforce
sites:
  ams01:
    transits:
      - {asn: 1299, sessions: [192.0.2.11]}
      - {asn: 3356, sessions: [192.0.2.12]}
`))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)
	for _, c := range []struct {
		rule  string
		modes map[string]string
		want  string // mode of the record, "" for none
	}{
		{"transit-packet-loss", map[string]string{"transit-packet-loss": ModeDryRun}, ModeDryRun},
		{"transit-packet-loss", map[string]string{"transit-packet-loss": ModeOff}, ""},
		{"other-rule", map[string]string{"transit-packet-loss": ModeEnforce}, ""},
	} {
		tr, err := NewTransits(cfg, map[string]Speaker{"ams01": tripwire{t}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr.RuleModes = c.modes
		ev := alerting.Event{ID: "l", Status: alerting.Firing, Rule: c.rule, Detector: "packet_loss", Entity: "transit:1299@ams01", At: at}
		if err := tr.Send(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
		recs, _ := tr.Records()
		got := ""
		if len(recs) > 0 {
			got = recs[0].Mode
		}
		if got != c.want || len(recs) > 1 {
			t.Errorf("rule %s, modes %v: records %+v, want one in mode %q", c.rule, c.modes, recs, c.want)
		}
	}
}

// Anycast routes in and out of the speaker's table, IPv4 and IPv6.
func TestRouterAnnounceWithdraw(t *testing.T) {
	s := startSpeaker(t, 64500, "192.0.2.1", -1, nil, server.LoggerOption(&capture{comms: map[string][]string{}}))
	r := Embedded{s}
	ctx := context.Background()
	table := func(afi api.Family_Afi) []string {
		var out []string
		_ = s.ListPath(ctx, &api.ListPathRequest{TableType: api.TableType_GLOBAL, Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}},
			func(d *api.Destination) { out = append(out, d.Prefix) })
		return out
	}
	v4, v6 := netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:100::/48")
	if err := r.Announce(ctx, v4, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	if err := r.Announce(ctx, v6, netip.MustParseAddr("2001:db8::1")); err != nil {
		t.Fatal(err)
	}
	if got4, got6 := table(api.Family_AFI_IP), table(api.Family_AFI_IP6); !slices.Equal(got4, []string{"198.51.100.0/24"}) || !slices.Equal(got6, []string{"2001:db8:100::/48"}) {
		t.Fatalf("after announce: %v %v", got4, got6)
	}
	if err := r.Withdraw(ctx, v6, netip.MustParseAddr("2001:db8::1")); err != nil {
		t.Fatal(err)
	}
	if err := r.Withdraw(ctx, v4, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	if got4, got6 := table(api.Family_AFI_IP), table(api.Family_AFI_IP6); len(got4)+len(got6) != 0 {
		t.Fatalf("after withdraw: %v %v", got4, got6)
	}
}

// A transit whose sessions are down for another reason does not count as
// carrying traffic: with Level 3 already down at ams01, Telia is the last
// transit there and stays up; at fra01 Level 3 carries, and Telia goes.
func TestLastCarryingTransit(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	if err := l.edge.DisablePeer(ctx, &api.DisablePeerRequest{Address: "127.0.2.21", Communication: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	l.waitEstablished(t, 5)
	tr, err := NewTransits(l.config(t, ModeEnforce, false), l.speakers(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := alerting.Event{ID: "loss", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss", Entity: "transit:1299",
		At: time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC), Details: map[string]any{"sites": []any{"ams01", "fra01"}}}
	if err := tr.Send(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	recs, _ := tr.Records()
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Site+": "+r.Why)
	}
	want := []string{"refused ams01: AS1299 is the last transit up at ams01 (AS3356: no session established)", "shutdown fra01: packet loss alert loss"}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n%s", strings.Join(got, "\n"))
	}
	l.waitEstablished(t, 4)
	if got := l.established(t); !slices.Equal(got, []string{"127.0.1.11", "127.0.1.13", "127.0.2.22", "127.0.2.23"}) {
		t.Fatalf("established %v", got)
	}
}

// A shutdown that fails half-way (a session gobgp does not know) puts back
// what it shut, records why, and returns an error so the outbox retries;
// the retry is not refused by a cool-down.
func TestFailedShutdownRetries(t *testing.T) {
	l := newLab(t)
	cfg, err := ParseConfig("t.yaml", []byte(`mode: enforce
sites:
  ams01:
    transits:
      - {asn: 1299, sessions: [127.0.1.11, 127.0.9.9]}
      - {asn: 3356, sessions: [127.0.2.21]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransits(cfg, map[string]Speaker{"ams01": Embedded{l.edge}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := alerting.Event{ID: "loss", Status: alerting.Firing, Detector: "packet_loss", Entity: "transit:1299@ams01", At: time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)}
	for range 2 {
		e := ev
		if err := tr.Send(ctx, &e); err == nil || !strings.Contains(err.Error(), "127.0.9.9") {
			t.Fatalf("send: %v", err)
		}
	}
	recs, _ := tr.Records()
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Why)
	}
	want := []string{"shutdown packet loss alert loss", "refused gobgp call failed", "shutdown packet loss alert loss", "refused gobgp call failed"}
	if !slices.Equal(got, want) {
		t.Fatalf("records %q", got)
	}
	// 127.0.1.11 was enabled again: admin state up. gobgp hands the
	// change to the peer's state machine, which applies it a moment later.
	waitFor(t, "127.0.1.11 admin state up", func() bool {
		up := false
		err := l.edge.ListPeer(ctx, &api.ListPeerRequest{Address: "127.0.1.11"}, func(p *api.Peer) {
			up = p.State.AdminState == api.PeerState_UP
		})
		if err != nil {
			t.Fatal(err)
		}
		return up
	})
}

// A session shut and enabled again at once is up when EnablePeer returns,
// and down when DisablePeer does: gobgp applies an admin state a moment
// after it answers, and drops a request while the one before still waits,
// so a shutdown undone in the same breath could leave a transit down.
func TestSpeakerAdminStateSettles(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	sp := Embedded{l.edge}
	admin := func() api.PeerState_AdminState {
		t.Helper()
		st, err := adminOf(ctx, l, "127.0.1.11")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for round := range 20 {
		if err := sp.DisablePeer(ctx, "127.0.1.11", "test"); err != nil {
			t.Fatal(err)
		}
		if st := admin(); st != api.PeerState_DOWN {
			t.Fatalf("round %d: admin state %v after DisablePeer", round, st)
		}
		if err := sp.EnablePeer(ctx, "127.0.1.11"); err != nil {
			t.Fatal(err)
		}
		if st := admin(); st != api.PeerState_UP {
			t.Fatalf("round %d: admin state %v after EnablePeer", round, st)
		}
	}
}

// adminOf reads a neighbour's admin state from the edge speaker itself.
func adminOf(ctx context.Context, l *lab, n string) (api.PeerState_AdminState, error) {
	var st api.PeerState_AdminState = -1
	err := l.edge.ListPeer(ctx, &api.ListPeerRequest{Address: n}, func(p *api.Peer) { st = p.State.AdminState })
	return st, err
}
