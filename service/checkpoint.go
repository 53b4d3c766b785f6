package service

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// CheckpointFile is the name of the checkpoint inside the data directory.
const CheckpointFile = "checkpoint.bin"

const checkpointMagic = "OWCP0001"

// PartitionState is what a checkpoint keeps per topic partition: the next
// offset to read (every record before it is inside the pipeline state of
// the same checkpoint) and the highest event time seen, which is that
// partition's watermark.
type PartitionState struct {
	Topic     string
	Partition int32
	Next      int64
	MaxTime   int64
}

// Checkpoint is the restartable state of one service instance. Pipeline
// (which includes the state of stateful decoders such as the routing table)
// and the partition offsets are written together, so after a crash the
// records after Next are re-read into exactly the state that preceded them.
type Checkpoint struct {
	Pipeline   []byte
	Partitions []PartitionState
	// WrittenAt is wall time (Unix ns), for operators only.
	WrittenAt int64
}

// WriteCheckpoint writes cp to dir atomically: a temp file, fsynced, renamed
// over the old one, and the directory fsynced, so a crash leaves either the
// old checkpoint or the new one, never a torn file. The file starts with a
// magic and a CRC of the body, so a damaged file is refused, not misread.
func WriteCheckpoint(dir string, cp *Checkpoint) error {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(cp); err != nil {
		return fmt.Errorf("checkpoint: encode: %w", err)
	}
	var hdr [12]byte
	copy(hdr[:8], checkpointMagic)
	binary.BigEndian.PutUint32(hdr[8:], crc32.ChecksumIEEE(body.Bytes()))
	path := filepath.Join(dir, CheckpointFile)
	tmp, err := os.CreateTemp(dir, CheckpointFile+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	_, err = tmp.Write(hdr[:])
	if err == nil {
		_, err = tmp.Write(body.Bytes())
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadCheckpoint reads the checkpoint in dir; (nil, nil) when there is none.
func ReadCheckpoint(dir string) (*Checkpoint, error) {
	path := filepath.Join(dir, CheckpointFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[:8]) != checkpointMagic {
		return nil, fmt.Errorf("checkpoint %s: not an outagewatch checkpoint", path)
	}
	if crc32.ChecksumIEEE(b[12:]) != binary.BigEndian.Uint32(b[8:12]) {
		return nil, fmt.Errorf("checkpoint %s: checksum mismatch (damaged file)", path)
	}
	var cp Checkpoint
	if err := gob.NewDecoder(bytes.NewReader(b[12:])).Decode(&cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &cp, nil
}
