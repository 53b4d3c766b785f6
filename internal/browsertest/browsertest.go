// Package browsertest drives Debian's headless chromium for the tests of
// the pages outagewatch serves: it skips when no browser is installed,
// records console errors and uncaught exceptions, and writes screenshots
// where $OUTAGEWATCH_ARTIFACTS says (CI keeps them).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Require returns the chromium binary, or skips the test.
func Require(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium binary: install Debian's chromium (apt-get install chromium) to run the browser tests"
	if os.Getenv("CI") != "" {
		// CI installs it: a skip there would hide a missing install step.
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Artefacts is where screenshots go: $OUTAGEWATCH_ARTIFACTS, else a
// directory of the test's own.
func Artefacts(t testing.TB) string {
	if d := os.Getenv("OUTAGEWATCH_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// Browser is one headless tab.
type Browser struct {
	Ctx    context.Context
	t      testing.TB
	mu     sync.Mutex
	errors []string
}

// New starts chromium (skipping the test without one) with a tab that
// records console errors.
func New(t testing.TB) *Browser {
	t.Helper()
	bin := Require(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1000, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancel3)
	b := &Browser{Ctx: ctx, t: t}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				b.errors = append(b.errors, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			b.errors = append(b.errors, "exception: "+msg)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ConsoleErrors returns the errors logged so far.
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Do runs actions, failing the test on error.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.Ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// Text returns the text of the first node matching the CSS selector.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("%s: %v", sel, err)
	}
	return v
}

// Int evaluates a JavaScript expression to a number.
func (b *Browser) Int(expr string) int {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// String evaluates a JavaScript expression to a string.
func (b *Browser) String(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// Shot writes a full-page screenshot at the given viewport size.
func (b *Browser) Shot(file string, width, height int64) {
	b.t.Helper()
	b.Do(chromedp.EmulateViewport(width, height))
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(Artefacts(b.t), file)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%d bytes)", path, len(png))
}
