package dnsin

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	dnstap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/encoding/protowire"
)

// Frame describes one dnstap message for AppendDnstap: what the fixture
// renderer knows about a client query or response.
type Frame struct {
	// Type is CLIENT_QUERY or CLIENT_RESPONSE (any Message_Type is written).
	Type dnstap.Message_Type
	// QueryTime is when the resolver got the query, in Unix nanoseconds.
	QueryTime int64
	// ResponseTime is when it answered; zero writes no response time.
	ResponseTime int64
	Client       netip.Addr
	ClientPort   uint16
	Server       netip.Addr // zero writes no response address
	ServerPort   uint16
	TCP          bool
	// Identity names the resolver that logged the frame.
	Identity string
	ID       uint16
	// QName is a plain domain name ("www.example.pt" or with a final dot;
	// no escapes); QType its type.
	QName string
	QType uint16
	// Rcode is the response code of a response.
	Rcode int
}

var errFrameAddress = errors.New("dnstap frame: client address must be set")

// AppendDnstap appends one serialised dnstap.Dnstap message (a Frame
// Streams data frame payload) to dst. A query frame carries the DNS query,
// a response frame carries both the query and the response (header and
// question; no answer records), as resolvers log them.
func AppendDnstap(dst []byte, f *Frame) ([]byte, error) {
	if !f.Client.IsValid() {
		return dst, errFrameAddress
	}
	var nameBuf [maxNameWire + 1]byte
	name, err := packName(nameBuf[:0], f.QName)
	if err != nil {
		return dst, fmt.Errorf("dnstap frame: %w", err)
	}
	response := f.Type%2 == 0 // every *_RESPONSE type is even

	// The Message is built first, at the end of dst, then the envelope is
	// written before it: the message length must be known.
	var mb [512]byte
	m := mb[:0]
	m = protowire.AppendTag(m, fieldMsgType, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(f.Type))
	fam := dnstap.SocketFamily_INET
	if f.Client.Is6() && !f.Client.Is4In6() {
		fam = dnstap.SocketFamily_INET6
	}
	m = protowire.AppendTag(m, fieldMsgSocketFamily, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(fam))
	proto := dnstap.SocketProtocol_UDP
	if f.TCP {
		proto = dnstap.SocketProtocol_TCP
	}
	m = protowire.AppendTag(m, 3, protowire.VarintType) // socket_protocol
	m = protowire.AppendVarint(m, uint64(proto))
	m = protowire.AppendTag(m, fieldMsgQueryAddress, protowire.BytesType)
	m = appendAddr(m, f.Client)
	if f.Server.IsValid() {
		m = protowire.AppendTag(m, 5, protowire.BytesType) // response_address
		m = appendAddr(m, f.Server)
	}
	m = protowire.AppendTag(m, 6, protowire.VarintType) // query_port
	m = protowire.AppendVarint(m, uint64(f.ClientPort))
	if f.Server.IsValid() {
		m = protowire.AppendTag(m, 7, protowire.VarintType) // response_port
		m = protowire.AppendVarint(m, uint64(f.ServerPort))
	}
	m = protowire.AppendTag(m, fieldMsgQueryTimeSec, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(f.QueryTime/1e9))
	m = protowire.AppendTag(m, fieldMsgQueryTimeNsec, protowire.Fixed32Type)
	m = protowire.AppendFixed32(m, uint32(f.QueryTime%1e9))
	var wb [12 + maxNameWire + 1 + 4]byte
	m = protowire.AppendTag(m, fieldMsgQueryMessage, protowire.BytesType)
	m = protowire.AppendBytes(m, appendDNS(wb[:0], f.ID, false, 0, name, f.QType))
	if response {
		if f.ResponseTime != 0 {
			m = protowire.AppendTag(m, fieldMsgRespTimeSec, protowire.VarintType)
			m = protowire.AppendVarint(m, uint64(f.ResponseTime/1e9))
			m = protowire.AppendTag(m, fieldMsgRespTimeNsec, protowire.Fixed32Type)
			m = protowire.AppendFixed32(m, uint32(f.ResponseTime%1e9))
		}
		m = protowire.AppendTag(m, fieldMsgRespMessage, protowire.BytesType)
		m = protowire.AppendBytes(m, appendDNS(wb[:0], f.ID, true, f.Rcode, name, f.QType))
	}

	if f.Identity != "" {
		dst = protowire.AppendTag(dst, 1, protowire.BytesType) // identity
		dst = protowire.AppendString(dst, f.Identity)
	}
	dst = protowire.AppendTag(dst, fieldDnstapMessage, protowire.BytesType)
	dst = protowire.AppendBytes(dst, m)
	dst = protowire.AppendTag(dst, fieldDnstapType, protowire.VarintType)
	dst = protowire.AppendVarint(dst, dnstapTypeMessage)
	return dst, nil
}

func appendAddr(b []byte, a netip.Addr) []byte {
	if a.Is4() || a.Is4In6() {
		v := a.Unmap().As4()
		return protowire.AppendBytes(b, v[:])
	}
	v := a.As16()
	return protowire.AppendBytes(b, v[:])
}

// packName appends the wire form of a plain domain name.
func packName(dst []byte, name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".")
	if name != "" {
		for label := range strings.SplitSeq(name, ".") {
			if len(label) == 0 || len(label) > 63 {
				return dst, fmt.Errorf("qname %q: label of %d bytes", name, len(label))
			}
			if strings.IndexByte(label, '\\') >= 0 {
				return dst, fmt.Errorf("qname %q: escapes are not supported", name)
			}
			dst = append(dst, byte(len(label)))
			dst = append(dst, label...)
		}
	}
	dst = append(dst, 0)
	if len(dst) > maxNameWire {
		return dst, fmt.Errorf("qname %q: longer than 255 octets", name)
	}
	return dst, nil
}

// appendDNS appends a DNS message with one question and no records.
func appendDNS(b []byte, id uint16, response bool, rcode int, name []byte, qtype uint16) []byte {
	var flags uint16 = 1 << 8 // RD
	if response {
		flags |= 1<<15 | 1<<7 // QR, RA
	}
	flags |= uint16(rcode & 0x0f)
	b = append(b, byte(id>>8), byte(id), byte(flags>>8), byte(flags),
		0, 1, 0, 0, 0, 0, 0, 0)
	b = append(b, name...)
	return append(b, byte(qtype>>8), byte(qtype), 0, 1) // class IN
}

// QueryLog is one line of a JSON query log, for AppendQueryLog.
type QueryLog struct {
	Time     int64 // Unix nanoseconds
	Client   netip.Addr
	QName    string
	QType    uint16
	Rcode    int // a DNS rcode or RcodeTimeout
	Protocol string
}

// AppendQueryLog appends q as one JSON object and a newline, in the format
// QueryLogDecoder reads: time in RFC 3339 (UTC, nanoseconds), rcode by name.
func AppendQueryLog(dst []byte, q *QueryLog) []byte {
	dst = append(dst, `{"time":"`...)
	dst = time.Unix(0, q.Time).UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","client":"`...)
	dst = q.Client.AppendTo(dst)
	dst = append(dst, `","qname":`...)
	dst = appendJSONString(dst, q.QName)
	dst = append(dst, `,"qtype":`...)
	if s, ok := dnsTypeName(q.QType); ok {
		dst = appendJSONString(dst, s)
	} else {
		dst = strconv.AppendUint(dst, uint64(q.QType), 10)
	}
	dst = append(dst, `,"rcode":`...)
	switch name := rcodeName(q.Rcode); {
	case name != "":
		dst = appendJSONString(dst, name)
	default:
		dst = strconv.AppendInt(dst, int64(q.Rcode), 10)
	}
	if q.Protocol != "" {
		dst = append(dst, `,"protocol":`...)
		dst = appendJSONString(dst, q.Protocol)
	}
	return append(dst, "}\n"...)
}

func appendJSONString(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

func dnsTypeName(t uint16) (string, bool) {
	s, ok := dns.TypeToString[t]
	return s, ok
}

func rcodeName(rcode int) string {
	if rcode == RcodeTimeout {
		return "TIMEOUT"
	}
	if rcode < 0 || rcode > 0xfff {
		return ""
	}
	return dns.RcodeToString[rcode]
}
