package main

// The SIGTERM drain contract (docs/sandbox-pool.md), against the real process and a real signal:
// the test binary re-runs itself as the executor (EXECUTOR_TEST_SERVE=1), on a loopback port.

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("EXECUTOR_TEST_SERVE") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type running struct {
	cmd    *exec.Cmd
	url    string
	work   string
	mu     sync.Mutex
	stderr strings.Builder
}

func (r *running) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// start runs the executor on a free port and returns once it serves.
func start(t *testing.T) *running {
	t.Helper()
	r := &running{work: t.TempDir()}
	r.cmd = exec.Command(os.Args[0], "serve")
	r.cmd.Env = append(os.Environ(), "EXECUTOR_TEST_SERVE=1", "DOCKYARD_EXECUTOR_PORT=0", "DOCKYARD_WORK_DIR="+r.work)
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(pipe)
		for lines.Scan() {
			r.mu.Lock()
			r.stderr.WriteString(lines.Text() + "\n")
			r.mu.Unlock()
			if rest, ok := strings.CutPrefix(lines.Text(), "executor: serving on "); ok {
				addr <- rest
			}
		}
	}()
	select {
	case a := <-addr:
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		r.url = "http://127.0.0.1:" + port
	case <-time.After(10 * time.Second):
		t.Fatalf("executor did not serve: %s", r.log())
	}
	return r
}

func (r *running) submit(command string) (*http.Response, result, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	body, _ := json.Marshal(task{Command: command, Timeout: 30})
	resp, err := client.Post(r.url+"/task/submit", "application/json", strings.NewReader(string(body)))
	var res result
	if err == nil {
		defer resp.Body.Close()
		err = json.NewDecoder(resp.Body).Decode(&res)
	}
	return resp, res, err
}

// waitFor polls until the file exists (a task has started).
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

type answer struct {
	resp *http.Response
	res  result
	err  error
}

func TestSigtermFinishesTasksInFlightRefusesNewOnesAndExitsZero(t *testing.T) {
	r := start(t)
	done := make(chan answer, 2)
	for _, name := range []string{"a", "b"} {
		go func() {
			resp, res, err := r.submit("touch started-" + name + "; sleep 1; echo finished " + name)
			done <- answer{resp, res, err}
		}()
	}
	waitFor(t, filepath.Join(r.work, "started-a"))
	waitFor(t, filepath.Join(r.work, "started-b"))
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Stops accepting: the listener closes, so /health (the readiness probe) and new tasks are refused.
	var health error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := (&http.Client{Timeout: time.Second}).Get(r.url + "/health")
		if err != nil {
			health = err
			break
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			health = errors.New(resp.Status)
			break
		}
	}
	if health == nil {
		t.Fatalf("/health still answers 200 after SIGTERM: %s", r.log())
	}
	if resp, _, err := r.submit("touch late"); err == nil && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a task submitted while draining was accepted: HTTP %d", resp.StatusCode)
	}
	// The tasks in flight complete, answered in full.
	for range 2 {
		a := <-done
		if a.err != nil || a.resp.StatusCode != http.StatusOK || a.res.ExitCode != 0 ||
			!strings.HasPrefix(a.res.Output, "finished ") {
			t.Fatalf("a task in flight was lost: %v %+v %+v\n%s", a.err, a.resp, a.res, r.log())
		}
		if !a.resp.Close {
			t.Errorf("the answer of a draining executor keeps the connection open: %v", a.resp.Header)
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("executor exited with %v after draining: %s", err, r.log())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("executor still up after its tasks finished: %s", r.log())
	}
	if _, err := os.Stat(filepath.Join(r.work, "late")); err == nil {
		t.Fatal("the task submitted while draining ran")
	}
	if !strings.Contains(r.log(), "SIGTERM") || !strings.Contains(r.log(), "draining 2 task(s) in flight") {
		t.Errorf("stderr does not tell the drain: %s", r.log())
	}
}

func TestSigtermWithNothingInFlightExitsAtOnce(t *testing.T) {
	r := start(t)
	began := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v: %s", err, r.log())
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("an idle executor took %v to drain", took)
	}
}

func TestASecondSignalExitsAtOnceWithOne(t *testing.T) {
	r := start(t)
	go func() { _, _, _ = r.submit("touch started; sleep 60") }()
	waitFor(t, filepath.Join(r.work, "started"))
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	var exit *exec.ExitError
	if err := r.cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second SIGTERM: want exit 1, got %v: %s", err, r.log())
	}
}

func TestDrainingHandlersRefuseWithoutRunning(t *testing.T) {
	e := &executor{}
	mux := e.mux()
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/health before the drain: %d", rec.Code)
	}
	e.draining.Store(true)
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/health while draining: %d", rec.Code)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	rec = httptest.NewRecorder()
	body := strings.NewReader(`{"argv": ["/bin/sh", "-c", "touch ` + marker + `"]}`)
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/task/submit", body))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), "draining") {
		t.Fatalf("submit while draining: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused task ran")
	}
}
