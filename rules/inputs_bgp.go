package rules

// The shipped rules watch the BGP signals (announced space, withdrawals,
// full-feed peers), which the routing table and the BGP input register.
import _ "github.com/outagewatch/outagewatch/ingest/bgp"
