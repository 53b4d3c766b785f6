package alerting

// The wording tests name the BGP and DNS signals that the BGP and DNS
// inputs register; a program imports its inputs, and so do these tests.
import (
	_ "github.com/outagewatch/outagewatch/ingest/bgp"
	_ "github.com/outagewatch/outagewatch/ingest/dns"
)
