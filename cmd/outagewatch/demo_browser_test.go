package main

import (
	"bufio"
	"io"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/internal/browsertest"
)

// The demo's page in headless Chromium: opened while the data plays, it
// shows the Uganda shutdown appear by its own polling (the same document,
// never reloaded), with MTN Uganda among the networks once the traffic
// drops, and logs no script error.
func TestRunDemoInChromium(t *testing.T) {
	browsertest.Require(t)
	if testing.Short() {
		t.Skip("builds the binary and plays four weeks of data")
	}
	bin := buildBinary(t)
	// The browser starts first, so that it opens the page as soon as the
	// demo names it.
	b := browsertest.New(t)
	// A day of quiet data at 2000× is 43 s of page before the first alert.
	cmd := exec.Command(bin, "run", "--demo", "--speed", "2000", "--lead", "24h", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q names no page", line)
	}
	go io.Copy(io.Discard, br)

	b.Do(chromedp.Navigate(m[1]), chromedp.WaitVisible(chromedp.CSS("#updated")),
		chromedp.Evaluate[chromedp.Void](`window.owSameDocument = true`))
	const uganda = `[...document.querySelectorAll('#incidents tbody td[data-l=place]')].some(td => td.textContent === 'Uganda')`
	before := b.String(`(` + uganda + `) ? 'listed' : document.getElementById('empty').hidden ? 'other incidents' : 'no outage'`)
	// Logged, not asserted: how far the data has played when the page
	// first loads depends on how fast this machine is.
	t.Logf("page when first opened: %s\n%s", before, b.String(`document.body.innerText.slice(0, 300)`))
	b.Shot("demo-before.png", 1000, 700)

	b.Do(chromedp.Poll[chromedp.Void](uganda, chromedp.WithPollingTimeout(4*time.Minute)))
	if b.String(`document.getElementById('updated').textContent`)[:7] != "Updated" {
		t.Error("Uganda listed, but the page never updated itself")
	}
	b.Do(chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#incidents tbody tr')].some(tr =>
		tr.querySelector('td[data-l=place]').textContent === 'Uganda' &&
		tr.querySelector('td[data-l=networks]').textContent.includes('MTN Uganda (AS20294)'))`, chromedp.WithPollingTimeout(4*time.Minute)))
	if b.String(`window.owSameDocument === true ? 'same' : 'reloaded'`) != "same" {
		t.Error("the page was reloaded: it should update itself")
	}
	b.Shot("demo-uganda.png", 1000, 700)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	exited = true
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
