package rules

// The shipped rules watch the DNS signals, which the DNS input registers;
// importing it here makes Default parse wherever the rules package is used.
import _ "github.com/outagewatch/outagewatch/ingest/dns"
