package dnsin

import (
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
)

// Stream and format names under which the decoders are registered: records
// from a resolver's dnstap topic are Stream "dns", Format "dnstap"; JSON
// query logs are Format "dns-json".
const (
	Stream       = "dns"
	FormatDnstap = "dnstap"
	FormatJSON   = "dns-json"
)

func init() {
	ingest.RegisterFormat(Stream, FormatDnstap, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewDnstapDecoder(envMap(env), Config{}), nil
	})
	ingest.RegisterFormat(Stream, FormatJSON, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewQueryLogDecoder(envMap(env), Config{}), nil
	})
}

// envMap returns the pipeline's attribution data; without any, clients are
// unattributed but zones still get their failure ratio.
func envMap(env *ingest.Env) *netmap.Map {
	if env == nil || env.Map == nil {
		return netmap.New()
	}
	return env.Map
}
