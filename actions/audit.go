package actions

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// Audit operations.
const (
	OpShutdown = "shutdown"
	OpRestore  = "restore"
	OpRefused  = "refused"
	OpOverride = "override"
	// Notes, not actions: the loss behind a shutdown resolved (its hold
	// starts) or came back.
	OpLossResolved = "loss-resolved"
	OpLossBack     = "loss-back"
)

// Record is one line of the audit log: who did what, why, when, to which
// sessions, and how to undo it. The log is the actions' state: a process
// that starts, or an operator's `outagewatch actions undo` in another
// process, is read back from it.
type Record struct {
	Seq int    `json:"seq"`
	ID  string `json:"id"`
	// Time is the event time for automatic actions (so a replay writes the
	// same log twice), the wall clock for manual ones.
	Time time.Time `json:"time"`
	Who  string    `json:"who"`
	Op   string    `json:"op"`
	// Mode is dry-run or enforce: a dry-run record changed nothing.
	Mode     string   `json:"mode,omitempty"`
	Site     string   `json:"site"`
	ASN      uint32   `json:"asn"`
	Transit  string   `json:"transit,omitempty"`
	Sessions []string `json:"sessions,omitempty"`
	// Why is the reason: the alert's summary, a guardrail, an operator's
	// note.
	Why   string `json:"why"`
	Alert string `json:"alert,omitempty"`
	// Of is the shutdown a restore undoes.
	Of string `json:"of,omitempty"`
	// Keep is an override's setting: up, down or auto.
	Keep string `json:"keep,omitempty"`
	// Made, on an automatic restore, is when the actuator carried it out:
	// the first check of its clock (every restore_every live, each alert
	// in a replay) past the hold's end, which Time is. Time stays the
	// hold's end so that the cool-down and a replay's log do not depend
	// on when the check ran.
	Made time.Time `json:"made,omitzero"`
	// Undo is the command that reverses this record.
	Undo  string `json:"undo,omitempty"`
	Error string `json:"error,omitempty"`
}

// ParseRecord decodes one audit line.
func ParseRecord(line []byte) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("audit record: %w", err)
	}
	switch r.Op {
	case OpShutdown, OpRestore, OpRefused, OpOverride, OpLossResolved, OpLossBack:
	default:
		return Record{}, fmt.Errorf("audit record: unknown op %q", r.Op)
	}
	if r.ID == "" || r.Site == "" || r.ASN == 0 {
		return Record{}, errors.New("audit record: missing id, site or asn")
	}
	return r, nil
}

// Audit is the append-only audit log. A nil path keeps it in memory (a
// dry-run replay).
type Audit struct {
	mu      sync.Mutex
	path    string
	off     int64
	recs    []Record
	ids     map[string]bool
	Skipped int
	// opened is set once the log has been read at open; foreign then
	// collects what other processes append (an operator's undo or
	// override), for the actuator to page about.
	opened  bool
	foreign []Record
}

// OpenAudit reads the log at path (creating nothing until the first
// append). Malformed lines are counted in Skipped, logged and left out.
func OpenAudit(path string) (*Audit, error) {
	a := &Audit{path: path, ids: map[string]bool{}}
	if _, err := a.sync(); err != nil {
		return nil, err
	}
	a.opened = true
	return a, nil
}

// Records returns every record so far, including those other processes
// appended.
func (a *Audit) Records() ([]Record, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.sync(); err != nil {
		return nil, err
	}
	return append([]Record(nil), a.recs...), nil
}

// sync reads what was appended since the last read and returns it.
func (a *Audit) sync() ([]Record, error) {
	if a.path == "" {
		return nil, nil
	}
	f, err := os.Open(a.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(a.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	br := bufio.NewReader(f)
	var fresh []Record
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			break // a line still being written: read it next time
		}
		if len(line) > 0 {
			a.off += int64(len(line))
			if r, perr := ParseRecord(line); perr != nil {
				a.Skipped++
				slog.Warn("audit log: skipping malformed record", "file", a.path, "offset", a.off-int64(len(line)), "err", perr)
			} else if !a.ids[r.ID] {
				a.ids[r.ID] = true
				a.recs = append(a.recs, r)
				fresh = append(fresh, r)
				if a.opened {
					a.foreign = append(a.foreign, r)
				}
			}
		}
		if err == io.EOF {
			return fresh, nil
		}
		if err != nil {
			return fresh, fmt.Errorf("audit log: %w", err)
		}
	}
	return fresh, nil
}

// write appends r's line under the file lock. A last line without its
// newline can only be what a crash left of a write (writers hold the lock
// until their line is on disk), so it is ended first: the fragment then
// reads back as one malformed line, skipped and counted, and r stays a
// line of its own instead of being glued to it and lost with it.
func (a *Audit) write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(a.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("audit log: lock: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	line := append(b, '\n')
	if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		if last[0] != '\n' {
			slog.Warn("audit log: last line is torn (a write cut short); ending it before the next record", "file", a.path, "offset", st.Size())
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// append assigns r a sequence number and an ID, and writes it (fsynced)
// before the caller acts on it, so a crash mid-action leaves a trace. The
// caller holds a.mu and has synced.
func (a *Audit) append(r *Record) error {
	r.Seq = len(a.recs) + 1
	h := sha256.Sum256([]byte(strconv.Itoa(r.Seq) + "\x00" + r.Op + "\x00" + r.Site + "\x00" + strconv.Itoa(int(r.ASN)) + "\x00" + r.Time.Format(time.RFC3339Nano) + "\x00" + r.Who))
	r.ID = hex.EncodeToString(h[:6])
	if r.Op == OpShutdown {
		r.Undo = "outagewatch actions undo " + r.ID
	}
	if a.path != "" {
		if err := a.write(r); err != nil {
			return err
		}
	}
	// Ours first, so that reading it back (after any line another process
	// appended before it) does not count it twice.
	a.ids[r.ID] = true
	a.recs = append(a.recs, *r)
	_, err := a.sync()
	return err
}
