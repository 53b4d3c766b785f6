package flows

import (
	"net"
	"net/netip"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	flowpb "github.com/netsampler/goflow2/v2/pb"
	protoproducer "github.com/netsampler/goflow2/v2/producer/proto"
)

// AppendDelimited appends m as goflow2 puts it on Kafka with -format=bin:
// the protobuf encoding behind its length as a varint (protodelim's framing).
func AppendDelimited(dst []byte, m *flowpb.FlowMessage) ([]byte, error) {
	opts := proto.MarshalOptions{}
	dst = protowire.AppendVarint(dst, uint64(opts.Size(m)))
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(dst, m)
}

// AppendJSON appends m as goflow2 v2 writes it with -format=json and no
// mapping file: every field of FlowMessage in declaration order, zero values
// included, addresses and MACs as text, etype and proto as names, src_net
// and dst_net as prefixes of the addresses. The fixture renderer uses it to
// produce what a real collector would send; TestAppendJSONMatchesGoflow2
// compares it with goflow2's own formatter.
func AppendJSON(dst []byte, m *flowpb.FlowMessage) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, m.GetType().String()...)
	dst = appendUint(dst, `","time_received_ns":`, m.GetTimeReceivedNs())
	dst = appendUint(dst, `,"sequence_num":`, uint64(m.GetSequenceNum()))
	dst = appendUint(dst, `,"sampling_rate":`, m.GetSamplingRate())
	dst = appendIP(dst, `,"sampler_address":`, m.GetSamplerAddress())
	dst = appendUint(dst, `,"time_flow_start_ns":`, m.GetTimeFlowStartNs())
	dst = appendUint(dst, `,"time_flow_end_ns":`, m.GetTimeFlowEndNs())
	dst = appendUint(dst, `,"bytes":`, m.GetBytes())
	dst = appendUint(dst, `,"packets":`, m.GetPackets())
	dst = appendIP(dst, `,"src_addr":`, m.GetSrcAddr())
	dst = appendIP(dst, `,"dst_addr":`, m.GetDstAddr())
	dst = appendString(dst, `,"etype":`, etypeName(m.GetEtype()))
	dst = appendString(dst, `,"proto":`, protoproducer.ProtoName(m.GetProto()))
	dst = appendUint(dst, `,"src_port":`, uint64(m.GetSrcPort()))
	dst = appendUint(dst, `,"dst_port":`, uint64(m.GetDstPort()))
	dst = appendUint(dst, `,"in_if":`, uint64(m.GetInIf()))
	dst = appendUint(dst, `,"out_if":`, uint64(m.GetOutIf()))
	dst = appendMAC(dst, `,"src_mac":`, m.GetSrcMac())
	dst = appendMAC(dst, `,"dst_mac":`, m.GetDstMac())
	dst = appendUint(dst, `,"src_vlan":`, uint64(m.GetSrcVlan()))
	dst = appendUint(dst, `,"dst_vlan":`, uint64(m.GetDstVlan()))
	dst = appendUint(dst, `,"vlan_id":`, uint64(m.GetVlanId()))
	dst = appendUint(dst, `,"ip_tos":`, uint64(m.GetIpTos()))
	dst = appendUint(dst, `,"forwarding_status":`, uint64(m.GetForwardingStatus()))
	dst = appendUint(dst, `,"ip_ttl":`, uint64(m.GetIpTtl()))
	dst = appendUint(dst, `,"ip_flags":`, uint64(m.GetIpFlags()))
	dst = appendUint(dst, `,"tcp_flags":`, uint64(m.GetTcpFlags()))
	dst = appendUint(dst, `,"icmp_type":`, uint64(m.GetIcmpType()))
	dst = appendUint(dst, `,"icmp_code":`, uint64(m.GetIcmpCode()))
	dst = appendUint(dst, `,"ipv6_flow_label":`, uint64(m.GetIpv6FlowLabel()))
	dst = appendUint(dst, `,"fragment_id":`, uint64(m.GetFragmentId()))
	dst = appendUint(dst, `,"fragment_offset":`, uint64(m.GetFragmentOffset()))
	dst = appendUint(dst, `,"src_as":`, uint64(m.GetSrcAs()))
	dst = appendUint(dst, `,"dst_as":`, uint64(m.GetDstAs()))
	dst = appendIP(dst, `,"next_hop":`, m.GetNextHop())
	dst = appendUint(dst, `,"next_hop_as":`, uint64(m.GetNextHopAs()))
	dst = appendString(dst, `,"src_net":`, netName(m.GetSrcAddr(), m.GetSrcNet()))
	dst = appendString(dst, `,"dst_net":`, netName(m.GetDstAddr(), m.GetDstNet()))
	dst = appendIP(dst, `,"bgp_next_hop":`, m.GetBgpNextHop())
	dst = appendUints(dst, `,"bgp_communities":`, m.GetBgpCommunities())
	dst = appendUints(dst, `,"as_path":`, m.GetAsPath())
	dst = appendUints(dst, `,"mpls_ttl":`, m.GetMplsTtl())
	dst = appendUints(dst, `,"mpls_label":`, m.GetMplsLabel())
	dst = appendIPs(dst, `,"mpls_ip":`, m.GetMplsIp())
	dst = appendUint(dst, `,"observation_domain_id":`, uint64(m.GetObservationDomainId()))
	dst = appendUint(dst, `,"observation_point_id":`, uint64(m.GetObservationPointId()))
	dst = append(dst, `,"layer_stack":[`...)
	for i, l := range m.GetLayerStack() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendQuote(dst, l.String())
	}
	dst = append(dst, ']')
	dst = appendUints(dst, `,"layer_size":`, m.GetLayerSize())
	dst = appendIPs(dst, `,"ipv6_routing_header_addresses":`, m.GetIpv6RoutingHeaderAddresses())
	dst = appendUint(dst, `,"ipv6_routing_header_seg_left":`, uint64(m.GetIpv6RoutingHeaderSegLeft()))
	return append(dst, '}')
}

func appendUint(dst []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(dst, key...), v, 10)
}

// appendString writes s between quotes as goflow2 does, without escaping:
// every string it renders is a name, an address or a prefix.
func appendString(dst []byte, key, s string) []byte {
	dst = append(dst, key...)
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendIP(dst []byte, key string, b []byte) []byte {
	dst = append(dst, key...)
	return appendIPValue(dst, b)
}

// appendIPValue renders an address as goflow2's IP renderer does: 4 or 16
// bytes as text, anything else as an empty string.
func appendIPValue(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	if a, ok := netip.AddrFromSlice(b); ok {
		dst = a.AppendTo(dst)
	}
	return append(dst, '"')
}

func appendIPs(dst []byte, key string, bs [][]byte) []byte {
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, b := range bs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendIPValue(dst, b)
	}
	return append(dst, ']')
}

func appendUints(dst []byte, key string, vs []uint32) []byte {
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	return append(dst, ']')
}

func appendMAC(dst []byte, key string, v uint64) []byte {
	mac := net.HardwareAddr{byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	return appendString(dst, key, mac.String())
}

// etypeName mirrors goflow2's EtherType renderer, which knows three names
// and writes "" for the rest.
func etypeName(e uint32) string {
	switch e {
	case 0x806:
		return "ARP"
	case 0x800:
		return "IPv4"
	case 0x86dd:
		return "IPv6"
	}
	return ""
}

// netName mirrors goflow2's network renderer: the address masked to the
// prefix length, or "invalid Prefix" when the two do not fit together.
func netName(addr []byte, bits uint32) string {
	a, _ := netip.AddrFromSlice(addr)
	if bits > 128 {
		return netip.Prefix{}.String()
	}
	p, _ := a.Prefix(int(bits))
	return p.String()
}
