// Package examples bundles the example rules (IODA's, a Radar-style
// export's, RIPE Atlas's) into the binary, as package fixtures bundles the
// incidents: `--rules examples/ioda/ioda.yaml` and the scoreboard's IODA
// rules then work from any directory with nothing but the executable. A
// file of that path on disk is read first.
package examples

import (
	"embed"
	"path"
	"strings"
)

//go:embed */*.yaml
var files embed.FS

// Read returns a bundled example file by its path from the repository
// root ("examples/ioda/ioda.yaml"), or by any path ending in it
// ("../examples/ioda/ioda.yaml", "/opt/src/examples/ioda/ioda.yaml").
func Read(p string) ([]byte, bool) {
	p = path.Clean(strings.ReplaceAll(p, `\`, "/"))
	i := strings.LastIndex("/"+p, "/examples/")
	if i < 0 {
		return nil, false
	}
	b, err := files.ReadFile(p[i+len("examples/"):])
	return b, err == nil
}
