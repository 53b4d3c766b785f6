package pipeline

import (
	"bytes"
	"encoding"
	"encoding/gob"
	"fmt"

	"github.com/outagewatch/outagewatch/detectors"
)

// checkpoint is the pipeline's checkpoint: each stage's section. The
// built-in stages write the fields they wrote before the pipeline was a
// chain (decode: Formats, Shared, Held, Records and Errors; aggregate:
// Aggregator, Pre, Watermark and the partial/ Errors; feed-health:
// Silence; judge: Detectors; alert: Alerts; correlate: Outages), so a checkpoint
// restores across that change. Every other stage (the mute stages, and
// those inserted into the chain) writes its section in Sections, under
// its name; a checkpoint without the mute stages' sections was written
// when the correlator muted alerts, and they take their state from its
// section.
type checkpoint struct {
	// Formats lists the decoders built, so a restore builds them (and the
	// shared state they own) before putting that state back.
	Formats []string
	// Shared is the state of stateful decoders (the routing table): every
	// value in Env.Shared that implements encoding.BinaryMarshaler.
	Shared     map[string][]byte
	Held       []heldRecord
	Aggregator []byte
	// Pre is stage one's open buckets (absent from older checkpoints,
	// whose open buckets are all in Aggregator).
	Pre       []byte
	Detectors map[string][]byte
	// DetectorNames are the detectors whose state Detectors holds, by
	// rule name (absent from older checkpoints).
	DetectorNames map[string]string
	Silence       *detectors.FeedSilence
	Alerts        []byte
	Outages       []byte
	Records       map[string]int64
	Errors        map[string]int64
	Watermark     int64
	// Sections are the inserted stages' states, by stage name.
	Sections map[string][]byte
}

// sections are the built-in stages, in the order they restore.
func (p *Pipeline) sections() []section {
	return []section{p.decode, p.agg, p.feeds, p.judge, p.alert, p.corr}
}

// MarshalBinary checkpoints everything the pipeline knows: history, open
// buckets, held records, detector and alert state, and the state of
// stateful decoders (the routing table).
func (p *Pipeline) MarshalBinary() ([]byte, error) {
	var cp checkpoint
	for _, s := range p.sections() {
		if err := s.save(&cp); err != nil {
			return nil, err
		}
	}
	for _, s := range p.chain {
		m, ok := s.(encoding.BinaryMarshaler)
		if _, builtin := s.(section); !ok || builtin {
			continue
		}
		b, err := m.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("pipeline: checkpoint stage %s: %w", s.Name(), err)
		}
		if cp.Sections == nil {
			cp.Sections = map[string][]byte{}
		}
		cp.Sections[s.Name()] = b
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(&cp)
	return b.Bytes(), err
}

// UnmarshalBinary restores a checkpoint into a new pipeline built with the
// same configuration (and the same stages inserted). Rules that are new
// since the checkpoint start fresh, and so does an inserted stage whose
// section the checkpoint lacks.
//
// The checkpoint is gob, which trusts its input: a damaged length can
// ask for a map of billions of entries before any check of ours. So b
// must be what MarshalBinary wrote, and the service seals every copy it
// keeps with a CRC32C that it checks before calling this
// (service/statefile.go).
func (p *Pipeline) UnmarshalBinary(b []byte) error {
	var cp checkpoint
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&cp); err != nil {
		return fmt.Errorf("pipeline: restore: %w", err)
	}
	for _, s := range p.sections() {
		if err := s.restore(&cp); err != nil {
			return err
		}
	}
	for _, s := range p.chain {
		u, ok := s.(encoding.BinaryUnmarshaler)
		if _, builtin := s.(section); !ok || builtin {
			continue
		}
		sec, ok := cp.Sections[s.Name()]
		if !ok {
			continue
		}
		if err := u.UnmarshalBinary(sec); err != nil {
			return fmt.Errorf("pipeline: restore stage %s: %w", s.Name(), err)
		}
	}
	_, s := cp.Sections[p.silences.Name()]
	_, f := cp.Sections[p.faults.Name()]
	if !s && !f {
		// Written when the correlator muted alerts itself: the mute
		// stages' state is in its section.
		takeLegacy(p.corr.corr, p.silences, p.faults)
	}
	p.retireOrphans()
	return nil
}
