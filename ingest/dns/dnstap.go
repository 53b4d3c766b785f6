package dnsin

import (
	"fmt"
	"net/netip"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// Field numbers of dnstap.proto (github.com/dnstap/golang-dnstap); a test
// checks each against the generated descriptor.
const (
	fieldDnstapType    protowire.Number = 15 // Dnstap.type, enum, required
	fieldDnstapMessage protowire.Number = 14 // Dnstap.message

	fieldMsgType          protowire.Number = 1  // Message.type, enum, required
	fieldMsgSocketFamily  protowire.Number = 2  // Message.socket_family
	fieldMsgQueryAddress  protowire.Number = 4  // Message.query_address, bytes
	fieldMsgQueryTimeSec  protowire.Number = 8  // Message.query_time_sec, uint64
	fieldMsgQueryTimeNsec protowire.Number = 9  // Message.query_time_nsec, fixed32
	fieldMsgQueryMessage  protowire.Number = 10 // Message.query_message, bytes
	fieldMsgRespTimeSec   protowire.Number = 12 // Message.response_time_sec
	fieldMsgRespTimeNsec  protowire.Number = 13 // Message.response_time_nsec
	fieldMsgRespMessage   protowire.Number = 14 // Message.response_message
)

// Enum values of dnstap.proto.
const (
	dnstapTypeMessage    = 1 // Dnstap.Type MESSAGE
	msgTypeClientQuery   = 5 // Message.Type CLIENT_QUERY
	msgTypeClientReponse = 6 // Message.Type CLIENT_RESPONSE
)

// ContentType is the Frame Streams content type of dnstap streams.
const ContentType = "protobuf:dnstap.Dnstap"

// dnstapMessage holds the fields of one dnstap Message this package reads;
// byte fields point into the frame.
type dnstapMessage struct {
	hasEnvType bool // Dnstap.type is present
	envType    uint64
	hasMessage bool // Dnstap.message is present

	hasType         bool
	typ             uint64
	queryAddress    []byte
	hasQueryTime    bool
	queryTimeSec    uint64
	queryTimeNsec   uint32
	hasRespTime     bool
	respTimeSec     uint64
	respTimeNsec    uint32
	queryMessage    []byte
	responseMessage []byte
}

// parseDnstap reads the Dnstap envelope of a frame and the fields of its
// Message with proto.Unmarshal's semantics for the fields it reads: the last
// value of a repeated scalar wins, a repeated message field merges, and a
// field it does not know, or whose wire type does not match, is skipped as
// an unknown field.
func parseDnstap(b []byte, m *dnstapMessage) error {
	*m = dnstapMessage{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ingest.Errorf("protobuf", "dnstap envelope: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == fieldDnstapType && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap type: %v", protowire.ParseError(n))
			}
			m.envType, m.hasEnvType, b = v, true, b[n:]
		case num == fieldDnstapMessage && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap message: %v", protowire.ParseError(n))
			}
			b, m.hasMessage = b[n:], true
			if err := m.parseMessage(v); err != nil {
				return err
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap field %d: %v", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}

func (m *dnstapMessage) parseMessage(msg []byte) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return ingest.Errorf("protobuf", "dnstap message: %v", protowire.ParseError(n))
		}
		msg = msg[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap message field %d: %v", num, protowire.ParseError(n))
			}
			msg = msg[n:]
			switch num {
			case fieldMsgType:
				m.typ, m.hasType = v, true
			case fieldMsgQueryTimeSec:
				m.queryTimeSec, m.hasQueryTime = v, true
			case fieldMsgRespTimeSec:
				m.respTimeSec, m.hasRespTime = v, true
			}
		case protowire.Fixed32Type:
			v, n := protowire.ConsumeFixed32(msg)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap message field %d: %v", num, protowire.ParseError(n))
			}
			msg = msg[n:]
			switch num {
			case fieldMsgQueryTimeNsec:
				m.queryTimeNsec = v
			case fieldMsgRespTimeNsec:
				m.respTimeNsec = v
			}
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap message field %d: %v", num, protowire.ParseError(n))
			}
			msg = msg[n:]
			switch num {
			case fieldMsgQueryAddress:
				m.queryAddress = v
			case fieldMsgQueryMessage:
				m.queryMessage = v
			case fieldMsgRespMessage:
				m.responseMessage = v
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return ingest.Errorf("protobuf", "dnstap message field %d: %v", num, protowire.ParseError(n))
			}
			msg = msg[n:]
		}
	}
	return nil
}

// eventTime returns the time of a message in Unix nanoseconds: the response
// time of a response (the query time if it has none), else the query time.
func (m *dnstapMessage) eventTime(preferResponse bool) (int64, bool) {
	sec, nsec, ok := m.queryTimeSec, m.queryTimeNsec, m.hasQueryTime
	if preferResponse && m.hasRespTime || !ok {
		sec, nsec, ok = m.respTimeSec, m.respTimeNsec, m.hasRespTime
	}
	// Beyond 2262 Unix nanoseconds overflow int64.
	if !ok || nsec >= 1e9 || sec > 9_000_000_000 {
		return 0, false
	}
	return int64(sec)*1e9 + int64(nsec), true
}

// FrameTime returns the event time of a dnstap frame in Unix nanoseconds, as
// the decoder will use it; ok is false when the frame does not parse or has
// no usable time.
func FrameTime(frame []byte) (t int64, ok bool) {
	var m dnstapMessage
	if err := parseDnstap(frame, &m); err != nil || !m.hasMessage {
		return 0, false
	}
	return m.eventTime(m.typ != msgTypeClientQuery)
}

// DnstapDecoder decodes dnstap frames: one record value is the payload of
// one Frame Streams data frame, a serialised dnstap.Dnstap message. It reads
// only the fields it needs, and of the DNS message only the header and the
// question name, so that one core keeps up with a busy resolver fleet.
//
// The client address of a frame is used for attribution and hashed for the
// distinct-client sketch; it is never stored.
type DnstapDecoder struct {
	cfg      Config
	attr     attributor
	msg      dnstapMessage
	ev       event
	sawQuery bool
}

var _ ingest.Decoder = (*DnstapDecoder)(nil)

// NewDnstapDecoder returns a decoder attributing clients with m.
func NewDnstapDecoder(m *netmap.Map, cfg Config) *DnstapDecoder {
	return &DnstapDecoder{
		cfg:  cfg,
		attr: newAttributor(m, cfg),
		ev:   event{name: make([]byte, 0, 4*maxNameWire)},
	}
}

// Stats returns the decoder's counters.
func (d *DnstapDecoder) Stats() Stats { return d.attr.stats }

// Decode decodes one dnstap frame into observations.
func (d *DnstapDecoder) Decode(value []byte, sink obs.Sink) error {
	d.attr.stats.Records++
	if err := d.decode(value, sink); err != nil {
		d.attr.stats.Malformed++
		return err
	}
	return nil
}

func (d *DnstapDecoder) decode(value []byte, sink obs.Sink) error {
	m := &d.msg
	if err := parseDnstap(value, m); err != nil {
		return err
	}
	if !m.hasEnvType {
		return ingest.Errorf("field_missing", "dnstap envelope has no type")
	}
	if m.envType != dnstapTypeMessage {
		d.attr.stats.Ignored++
		return nil
	}
	if !m.hasMessage {
		return ingest.Errorf("field_missing", "dnstap MESSAGE without a message")
	}
	if !m.hasType {
		return ingest.Errorf("field_missing", "dnstap message has no type")
	}
	ev := &d.ev
	var wire []byte
	switch m.typ {
	case msgTypeClientQuery:
		d.sawQuery = true
		if d.cfg.Count == CountResponses {
			d.attr.stats.Ignored++
			return nil
		}
		ev.query, ev.response = true, false
		wire = m.queryMessage
	case msgTypeClientReponse:
		ev.response = true
		ev.query = d.cfg.Count == CountResponses || d.cfg.Count == CountAuto && !d.sawQuery
		wire = m.responseMessage
	default:
		d.attr.stats.Ignored++
		return nil
	}
	if wire == nil {
		return ingest.Errorf("field_missing", "dnstap message type %d without its DNS message", m.typ)
	}
	t, ok := m.eventTime(m.typ == msgTypeClientReponse)
	if !ok {
		return ingest.Errorf("time", "dnstap message has no valid query or response time")
	}
	ev.time = t
	switch len(m.queryAddress) {
	case 4:
		ev.client = netip.AddrFrom4([4]byte(m.queryAddress))
	case 16:
		ev.client = netip.AddrFrom16([16]byte(m.queryAddress)).Unmap()
	default:
		return ingest.Errorf("address", "dnstap client address of %d bytes", len(m.queryAddress))
	}
	rcode, qd, err := dnsHeader(wire)
	if err != nil {
		return ingest.Errorf("dns", "%v", err)
	}
	ev.rcode = rcode
	ev.name = ev.name[:0]
	if qd > 0 {
		if ev.name, err = appendQuestionName(ev.name, wire); err != nil {
			return ingest.Errorf("dns", "%v", err)
		}
	}
	d.attr.observe(ev, sink)
	return nil
}

// String describes a Stats value for logs.
func (s Stats) String() string {
	return fmt.Sprintf("records=%d queries=%d responses=%d failures=%d ignored=%d unattributed=%d malformed=%d",
		s.Records, s.Queries, s.Responses, s.Failures, s.Ignored, s.Unattributed, s.Malformed)
}
