//go:build unix

package service

import "syscall"

// writable reports whether this user may create files in dir.
func writable(dir string) error { return syscall.Access(dir, 2 /* W_OK */) }
