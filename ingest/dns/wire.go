package dnsin

import "errors"

// Limits from RFC 1035 as miekg/dns applies them, so that a name this
// package accepts is one dns.UnpackDomainName accepts too.
const (
	maxNameWire     = 255
	maxPointers     = (maxNameWire+1)/2 - 2
	dnsHeaderLength = 12
)

var (
	errDNSShort   = errors.New("DNS message shorter than its header")
	errNameBuf    = errors.New("question name runs past the message")
	errNameLong   = errors.New("question name longer than 255 octets")
	errNamePtrs   = errors.New("too many compression pointers in question name")
	errNameLabel  = errors.New("reserved label type in question name")
	errNoQuestion = errors.New("no question")
)

// dnsHeader returns the response code and question count of a DNS message
// in wire format. Only the four header bits of the rcode are read: the ones
// that matter here (SERVFAIL, REFUSED) fit in them.
func dnsHeader(msg []byte) (rcode int, qdcount int, err error) {
	if len(msg) < dnsHeaderLength {
		return 0, 0, errDNSShort
	}
	return int(msg[3] & 0x0f), int(msg[4])<<8 | int(msg[5]), nil
}

// appendQuestionName appends the first question name of msg to dst in the
// presentation format of dns.UnpackDomainName, lower-cased and without the
// final dot (nothing for the root). It reads nothing past the name.
func appendQuestionName(dst, msg []byte) ([]byte, error) {
	off := dnsHeaderLength
	budget := maxNameWire
	ptrs := 0
	start := len(dst)
	for {
		if off >= len(msg) {
			return dst[:start], errNameBuf
		}
		c := int(msg[off])
		off++
		switch c & 0xc0 {
		case 0x00:
			if c == 0 {
				if len(dst) > start {
					dst = dst[:len(dst)-1] // final dot
				}
				return dst, nil
			}
			if off+c > len(msg) {
				return dst[:start], errNameBuf
			}
			budget -= c + 1
			if budget <= 0 {
				return dst[:start], errNameLong
			}
			for _, b := range msg[off : off+c] {
				switch {
				case b >= 'A' && b <= 'Z':
					dst = append(dst, b+('a'-'A'))
				case b == '.' || b == ' ' || b == '\'' || b == '@' || b == ';' ||
					b == '(' || b == ')' || b == '"' || b == '\\':
					dst = append(dst, '\\', b)
				case b < ' ' || b > '~':
					dst = append(dst, '\\', '0'+b/100, '0'+b/10%10, '0'+b%10)
				default:
					dst = append(dst, b)
				}
			}
			dst = append(dst, '.')
			off += c
		case 0xc0:
			if off >= len(msg) {
				return dst[:start], errNameBuf
			}
			ptrs++
			if ptrs > maxPointers {
				return dst[:start], errNamePtrs
			}
			off = (c&0x3f)<<8 | int(msg[off])
		default:
			return dst[:start], errNameLabel
		}
	}
}
