//go:build !unix

package actions

import "os"

// lockFile is a no-op where flock does not exist: appends are still single
// writes, and a torn last line is still ended before the next record.
func lockFile(*os.File) error { return nil }
