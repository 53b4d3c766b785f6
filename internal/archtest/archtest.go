// Package archtest keeps the dependencies of outagewatch pointing one way:
// the model (obs, series, netmap, chart) knows no wire format, the
// detectors and rules know no decoder, and the live service knows nothing
// of replay. The directions that must never appear are data, in
// forbidden.txt beside this file; the package's test lists every
// package's dependencies with golang.org/x/tools/go/packages and fails on
// any of them, so a move that puts one back fails in `go test ./...`
// instead of in review.
package archtest

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Rule forbids the packages under From to depend on those under To. Both
// are paths inside the module ("service", "ingest/quality").
type Rule struct {
	From, To string
	Why      string
	File     string // the rules file, and the line in it
	Line     int
}

// ParseRules reads rules, one "FROM TO WHY" a line; blank lines and lines
// starting with '#' are skipped. A bad line is an error naming name and
// the line.
func ParseRules(name string, r io.Reader) ([]Rule, error) {
	var out []Rule
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: want FROM TO WHY, got %q", name, n, line)
		}
		for _, p := range f[:2] {
			if strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "...") {
				return nil, fmt.Errorf("%s:%d: %q: want a package path inside the module, such as ingest or ingest/quality", name, n, p)
			}
		}
		if f[0] == f[1] {
			return nil, fmt.Errorf("%s:%d: %s may not be forbidden to depend on itself", name, n, f[0])
		}
		out = append(out, Rule{From: f[0], To: f[1], Why: strings.Join(f[2:], " "), File: name, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rules", name)
	}
	return out, nil
}

// under says whether pkg is prefix or a package below it.
func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// Graph is the import graph of a module's packages, by path inside the
// module ("cmd/outagewatch"); imports from outside the module are left out.
type Graph map[string][]string

// Violation is a package that depends on one a rule forbids it, with the
// shortest chain of imports that makes it so (From first, the forbidden
// package last).
type Violation struct {
	Rule  Rule
	Chain []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s:%d: %s must not depend on %s: %s)",
		strings.Join(v.Chain, " → "), v.Rule.File, v.Rule.Line, v.Rule.From, v.Rule.To, v.Rule.Why)
}

// Check returns every package of g under a rule's From that depends, in
// one or more steps, on a package under its To, in the order of the rules
// and then of the packages.
func Check(g Graph, rules []Rule) []Violation {
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	var out []Violation
	for _, r := range rules {
		for _, p := range pkgs {
			if !under(p, r.From) || under(p, r.To) {
				continue
			}
			if chain := g.path(p, func(q string) bool { return under(q, r.To) }); chain != nil {
				out = append(out, Violation{Rule: r, Chain: chain})
			}
		}
	}
	return out
}

// path returns the shortest import chain from p to a package for which
// hit is true, nil if there is none (breadth first, imports in sorted
// order, so the chain reported is always the same).
func (g Graph) path(p string, hit func(string) bool) []string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		imps := slices.Clone(g[q])
		slices.Sort(imps)
		for _, i := range imps {
			if _, seen := prev[i]; seen {
				continue
			}
			prev[i] = q
			if hit(i) {
				chain := []string{i}
				for c := q; c != ""; c = prev[c] {
					chain = append(chain, c)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, i)
		}
	}
	return nil
}

// Load lists the packages of the module in dir (every package, ./...) and
// their imports, without test files. A package that fails to load (a
// syntax error, a missing import) is an error: a graph with a hole in it
// proves nothing.
func Load(dir string) (Graph, error) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedModule, Dir: dir}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("archtest: list packages in %s: %w", dir, err)
	}
	g := Graph{}
	var errs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
		if p.Module == nil {
			errs = append(errs, p.PkgPath+": not in a module")
			continue
		}
		rel, ok := inModule(p.PkgPath, p.Module.Path)
		if !ok {
			continue
		}
		imps := []string{}
		for path := range p.Imports {
			if r, ok := inModule(path, p.Module.Path); ok {
				imps = append(imps, r)
			}
		}
		slices.Sort(imps)
		g[rel] = imps
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("archtest: %d packages failed to load: %s", len(errs), strings.Join(errs, "; "))
	}
	return g, nil
}

// inModule returns path relative to the module, "." for the module's root
// package; ok is false for a path outside it.
func inModule(path, module string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}
