package service

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// State files (a stage-two task's snapshot cache, stage one's routing
// table checkpoint) are an 8-byte position (the changelog offset the
// snapshot was written at, or 0), the payload, and a CRC32C of both. A
// file counts only once it is whole on disk: written to a temporary name,
// fsynced, renamed over the old one, and the directory fsynced, so a
// crash leaves the old file or the new one, and a damaged one is told
// from a good one instead of being decoded into wrong state.

// castagnoli is CRC32C, the checksum Kafka's own record batches carry.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errChecksum marks state whose checksum does not match its bytes.
var errChecksum = errors.New("checksum mismatch (damaged)")

// writeCache writes a state file durably; see above.
func writeCache(file string, at int64, b []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	buf := make([]byte, 8, 8+len(b)+4)
	binary.BigEndian.PutUint64(buf, uint64(at))
	buf = append(buf, b...)
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// readCache reads a state file written by writeCache: its position and
// payload, or an error wrapping errChecksum when it is damaged.
func readCache(file string) (int64, []byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, nil, err
	}
	if len(b) < 12 {
		return 0, nil, fmt.Errorf("%s: truncated (%d bytes)", file, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return 0, nil, fmt.Errorf("%s: %w", file, errChecksum)
	}
	return int64(binary.BigEndian.Uint64(body)), body[8:], nil
}

// sealSnapshot appends a CRC32C of a snapshot, so a reader of the
// changelog tells a damaged one (a chunk altered on the way or on disk)
// from a good one and falls back to the one before.
func sealSnapshot(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// openSnapshot checks and strips sealSnapshot's checksum.
func openSnapshot(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("snapshot of %d bytes: truncated", len(b))
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, errChecksum
	}
	return body, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
