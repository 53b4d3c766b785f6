package dcload

import "github.com/outagewatch/outagewatch/ingest"

// Stream is the ingest.Record stream kind of data-center load reports.
const Stream = "dcload"

func init() {
	ingest.RegisterFormat(Stream, Format, func(*ingest.Env) (ingest.Decoder, error) { return NewDecoder(), nil })
}
