//go:build unix

package actions

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, so that two processes
// appending to one audit log (serve and an operator's undo) never write at
// once, and a line left without its newline is known to be a crash's.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
