package dnsin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	framestream "github.com/farsightsec/golang-framestream"

	"github.com/outagewatch/outagewatch/ingest"
)

// MaxFrameSize is the largest dnstap frame ReadFrameStream accepts, the
// Frame Streams library's default. Larger frames are skipped with a warning.
const MaxFrameSize = framestream.DEFAULT_MAX_PAYLOAD_SIZE

// arenaSize is the size of the blocks record values are copied into: one
// allocation per block rather than one per frame.
const arenaSize = 256 << 10

// ReadFrameStream reads a unidirectional Frame Streams file or stream of
// content type protobuf:dnstap.Dnstap (as fstrm_capture, dnsdist, unbound,
// BIND or CoreDNS write it) and calls fn with one record per data frame:
// Stream "dns", Format "dnstap", Offset the index of the data frame, Time
// the dnstap message's time (response time for responses, query time
// otherwise). A frame without a usable time gets the time of the frame
// before it, so that a merge by time is not disturbed; the decoder rejects
// it later. Each record's Value is its own copy and may be kept.
//
// The stream ends at a STOP control frame or at the end of input between
// frames (a capture cut short); an end inside a frame returns an
// *ingest.TornError after the frames before it. An error returned by fn
// stops the reading and is returned.
func ReadFrameStream(r io.Reader, fn func(ingest.Record) error) error {
	fr, err := framestream.NewReader(r, &framestream.ReaderOptions{
		ContentTypes: [][]byte{[]byte(ContentType)},
	})
	if err != nil {
		if errors.Is(err, framestream.ErrContentTypeMismatch) {
			return fmt.Errorf("dnstap frame stream: content type is not %s: %w", ContentType, err)
		}
		return fmt.Errorf("dnstap frame stream: start frame: %w", err)
	}
	buf := make([]byte, MaxFrameSize)
	var arena []byte
	var last int64
	for off := int64(0); ; {
		n, err := fr.ReadFrame(buf)
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, framestream.ErrDataFrameTooLarge):
			slog.Warn("dnstap frame stream: skipping oversized frame", "offset", off, "max", MaxFrameSize)
			off++
			continue
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &ingest.TornError{Record: off, Err: fmt.Errorf("dnstap frame stream: the file ends inside frame %d (truncated): %w", off+1, err)}
		case err != nil:
			return fmt.Errorf("dnstap frame stream: after %d frames: %w", off, err)
		}
		if len(arena) < n {
			arena = make([]byte, max(arenaSize, n))
		}
		v := arena[:n:n]
		arena = arena[n:]
		copy(v, buf[:n])
		if t, ok := FrameTime(v); ok {
			last = t
		}
		rec := ingest.Record{Stream: "dns", Format: "dnstap", Offset: off, Time: last, Value: v}
		if err := fn(rec); err != nil {
			return err
		}
		off++
	}
}

// ReadFile reads a dnstap Frame Streams file with ReadFrameStream.
func ReadFile(path string, fn func(ingest.Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dnstap file: %w", err)
	}
	defer f.Close()
	if err := ReadFrameStream(bufio.NewReaderSize(f, 64<<10), fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// NewFileWriter returns a Frame Streams writer for dnstap frames, which
// writes the START control frame now and the STOP frame on Close; the
// fixture renderer and tests write files with it that ReadFrameStream and
// every dnstap tool read.
func NewFileWriter(w io.Writer) (*framestream.Writer, error) {
	fw, err := framestream.NewWriter(w, &framestream.WriterOptions{
		ContentTypes: [][]byte{[]byte(ContentType)},
	})
	if err != nil {
		return nil, fmt.Errorf("dnstap frame stream writer: %w", err)
	}
	return fw, nil
}
