package dashboard_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/freeport"
)

// This file drives a real headless Chromium through chromedriver's W3C
// WebDriver HTTP API, with net/http only: no browser-automation dependency.

// browserArgs start Chromium headless, isolated and quiet: no sandbox (CI
// runs as root), no GPU, no background traffic to Google's services.
func browserArgs(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + profile, "--window-size=1440,1240", "--force-device-scale-factor=1", "--hide-scrollbars"}
}

// findBrowser returns the paths of chromium and chromedriver. A missing one
// fails the test (never skips): the browser test is required.
func findBrowser(t *testing.T) (chromium, driver string) {
	t.Helper()
	var missing []string
	for _, name := range []string{"chromium", "chromedriver"} {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		if name == "chromium" {
			chromium = p
		} else {
			driver = p
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s not on PATH: the dashboard's browser test needs Debian's chromium and chromium-driver; run `bash scripts/chromium.sh` (make test does)",
			strings.Join(missing, " and "))
	}
	return chromium, driver
}

// webDriver is one chromedriver process and one browser session.
type webDriver struct {
	t       *testing.T
	base    string // chromedriver's URL
	session string
	client  *http.Client
}

// startBrowser starts chromedriver on a free port and opens a session of a
// fresh headless Chromium. Both end on t.Cleanup.
func startBrowser(t *testing.T) *webDriver {
	t.Helper()
	chromium, driver := findBrowser(t)
	port := freePort(t)
	logPath := filepath.Join(t.TempDir(), "chromedriver.log")
	cmd := exec.Command(driver, "--port="+strconv.Itoa(port), "--log-path="+logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromedriver: %v", err)
	}
	wd := &webDriver{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port),
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		if wd.session != "" {
			_ = wd.call("DELETE", "/session/"+wd.session, nil, nil)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // chromedriver and any browser left
		_ = cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("chromedriver log (tail):\n%s", b)
			}
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		var status struct {
			Ready bool `json:"ready"`
		}
		if err := wd.call("GET", "/status", nil, &status); err == nil && status.Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver at %s not ready within 20s", wd.base)
		}
		time.Sleep(100 * time.Millisecond)
	}

	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName":        "chrome",
		"goog:chromeOptions": map[string]any{"binary": chromium, "args": browserArgs(t.TempDir())},
	}}}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := wd.call("POST", "/session", caps, &created); err != nil {
		t.Fatalf("starting headless Chromium (%s) through chromedriver: %v", chromium, err)
	}
	wd.session = created.SessionID
	return wd
}

// call sends one WebDriver command and decodes its "value" into out.
func (wd *webDriver) call(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, wd.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := wd.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(env.Value, &e)
		return fmt.Errorf("%s %s: %s: %s", method, path, e.Error, firstLine(e.Message))
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (wd *webDriver) sessionPath(p string) string { return "/session/" + wd.session + p }

func (wd *webDriver) navigate(url string) {
	wd.t.Helper()
	if err := wd.call("POST", wd.sessionPath("/url"), map[string]string{"url": url}, nil); err != nil {
		wd.t.Fatalf("navigating to %s: %v", url, err)
	}
}

// eval runs a script in the page and decodes what it returns into out.
func (wd *webDriver) eval(script string, out any) error {
	return wd.call("POST", wd.sessionPath("/execute/sync"), map[string]any{"script": script, "args": []any{}}, out)
}

// click finds the element matching a CSS selector and clicks it.
func (wd *webDriver) click(selector string) error {
	var el map[string]string
	if err := wd.call("POST", wd.sessionPath("/element"), map[string]string{"using": "css selector", "value": selector}, &el); err != nil {
		return err
	}
	for _, id := range el { // the W3C element reference key
		return wd.call("POST", wd.sessionPath("/element/"+id+"/click"), map[string]any{}, nil)
	}
	return fmt.Errorf("no element reference for %s", selector)
}

// screenshot returns the viewport as PNG.
func (wd *webDriver) screenshot() ([]byte, error) {
	var b64 string
	if err := wd.call("GET", wd.sessionPath("/screenshot"), nil, &b64); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(b64)
}

// freePort is a port for chromedriver, drawn outside the kernel's
// ephemeral range (freeport) so that no outgoing connection takes it
// between the draw and the driver's bind.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Pick(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
