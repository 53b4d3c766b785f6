// Package quality decodes Internet-quality measurements (round-trip times,
// packet loss, bandwidth) from probes into observations: outagewatch's own
// JSON measurement (Decoder) and RIPE Atlas ping and traceroute results
// (AtlasDecoder).
// The signals it produces and the grammar of its path and probe entities
// are defined with the model, in obs/quality.
//
// Entities of a measurement:
//
//   - the source side: "asn:N" of the probe's network (src_asn, or the origin
//     AS of the probe's public address from netmap) and "country:CC"
//     (country, or netmap's country of that AS);
//   - the transit the probe's traffic left the site through,
//     obs.Transit(transit_asn, site) = "transit:1299@lis01", when named;
//   - for packet loss through a transit, one entity per destination under
//     that transit (see obs/quality.PathEntity), so that the packet-loss
//     detector can tell loss on one destination from loss on many.
package quality
