package rules

// The shipped rules watch the BGP signals (announced space, withdrawals,
// full-feed peers) and the DNS signals, which the routing table and the BGP
// and DNS inputs register. A program registers them by importing its inputs
// (cmd/outagewatch does); the rules package itself imports no decoder, so
// its tests import the two whose signals Default names.
import (
	_ "github.com/outagewatch/outagewatch/ingest/bgp"
	_ "github.com/outagewatch/outagewatch/ingest/dns"
)
