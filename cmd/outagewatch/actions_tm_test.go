package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/internal/bgptest"
)

type quietBGP struct{}

func (quietBGP) Panic(string, gobgplog.Fields) {}
func (quietBGP) Fatal(string, gobgplog.Fields) {}
func (quietBGP) Error(string, gobgplog.Fields) {}
func (quietBGP) Warn(string, gobgplog.Fields)  {}
func (quietBGP) Info(string, gobgplog.Fields)  {}
func (quietBGP) Debug(string, gobgplog.Fields) {}
func (quietBGP) SetLevel(gobgplog.LogLevel)    {}
func (quietBGP) GetLevel() gobgplog.LogLevel   { return gobgplog.ErrorLevel }

// actions serve --tm-anycast in enforce mode announces every site's
// prefixes on gobgpd (an embedded speaker with its gRPC API on loopback)
// at start, before any plan has been made.
func TestServeAnnouncesAnycastAtStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := l.Addr().String()
	l.Close()
	s := server.NewBgpServer(server.GrpcListenAddress(grpcAddr), server.LoggerOption(quietBGP{}))
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{Asn: 64500, RouterId: "192.0.2.1", ListenPort: -1}}); err != nil {
		t.Fatal(err)
	}
	defer bgptest.Stop(s)
	cfg, err := os.ReadFile("../../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "actions.yaml")
	cfg = regexp.MustCompile(`(?m)^gobgp: \S+`).ReplaceAll(cfg, []byte("gobgp: "+grpcAddr))
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dcload"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := actionsCmd()
	cmd.SetArgs([]string{"serve", "--config", cfgFile, "--listen", addr, "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
		"--topology", "../../trafficmanager/testdata/sections-and-loss.yaml", "--tm-topic", "dcload", "--tm-mode", "enforce",
		"--brokers", strings.Join(c.ListenAddrs(), ","),
		"--tm-anycast", "EWR=198.51.100.0/24@192.0.2.1", "--tm-anycast", "ORD=203.0.113.0/24@192.0.2.1"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	rib := func() []string {
		var out []string
		_ = s.ListPath(context.Background(), &api.ListPathRequest{TableType: api.TableType_GLOBAL,
			Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}}, func(d *api.Destination) { out = append(out, d.Prefix) })
		slices.Sort(out)
		return out
	}
	want := []string{"198.51.100.0/24", "203.0.113.0/24"}
	for deadline := time.Now().Add(60 * time.Second); !slices.Equal(rib(), want); {
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gobgp holds %v, want %v", rib(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
