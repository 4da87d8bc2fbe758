package main

// The kernel probe and the load generator, against the real executor process (start, main_test.go).

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// self runs this test binary as the executor with args and returns its stdout.
func self(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "EXECUTOR_TEST_SERVE=1")
	out, err := cmd.Output()
	return string(out), err
}

func TestSyscallProbeTellsAnUnknownSyscallFromAServedOne(t *testing.T) {
	if out, err := self(t, "syscall", "99999"); err != nil || out != "errno 38 ENOSYS\n" {
		t.Fatalf("syscall 99999: %q %v", out, err)
	}
	if out, err := self(t, "syscall", "39"); err != nil || !strings.HasPrefix(out, "ok ") || out == "ok 0\n" {
		t.Fatalf("getpid (39): %q %v", out, err)
	}
	if out, err := self(t, "syscall", "nope"); err == nil {
		t.Fatalf("a non-integer syscall number was accepted: %q", out)
	}
}

// loadRun runs `executor load ARGS` and parses its counts; safe off the test goroutine (no t.Fatal).
func loadRun(args ...string) (tally, error) {
	cmd := exec.Command(os.Args[0], append([]string{"load"}, args...)...)
	cmd.Env = append(os.Environ(), "EXECUTOR_TEST_SERVE=1")
	out, err := cmd.Output()
	var got tally
	if err == nil {
		err = json.Unmarshal(out, &got)
	}
	return got, err
}

func runLoad(t *testing.T, args ...string) tally {
	t.Helper()
	got, err := loadRun(args...)
	if err != nil {
		t.Fatalf("load %v: %v", args, err)
	}
	return got
}

func TestLoadCountsEveryTaskItSends(t *testing.T) {
	r := start(t)
	got := runLoad(t, r.url+"/task/submit", "4", "1")
	if got.Sent == 0 || got.OK != got.Sent || got.Lost+got.Refused+got.Failed != 0 || got.P99ms < got.P50ms ||
		got.PerSec <= 0 {
		t.Fatalf("a healthy executor: %+v", got)
	}
	failing := runLoad(t, r.url+"/task/submit", "2", "0.5", `{"argv": ["false"]}`)
	if failing.Sent == 0 || failing.Failed != failing.Sent {
		t.Fatalf("tasks that exit 1: %+v", failing)
	}
}

func TestLoadCountsTasksNobodyAnsweredAsLost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every connection is refused
	got := runLoad(t, "http://"+addr+"/task/submit", "2", "0.3")
	if got.Sent == 0 || got.Lost != got.Sent || got.OK != 0 || len(got.Errors) == 0 ||
		!strings.Contains(got.Errors[0], "refused") {
		t.Fatalf("a closed port: %+v", got)
	}
}

func TestLoadDuringADrainCountsRefusalsAndLossesNotSuccesses(t *testing.T) {
	r := start(t)
	type run struct {
		got tally
		err error
	}
	done := make(chan run, 1)
	go func() {
		got, err := loadRun(r.url+"/task/submit", "4", "2", `{"command": "sleep 0.2"}`)
		done <- run{got, err}
	}()
	time.Sleep(500 * time.Millisecond)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	res := <-done
	if res.err != nil {
		t.Fatalf("load: %v", res.err)
	}
	// The executor drains and exits: the tasks after it are refused at connect, so the count tells.
	if got := res.got; got.OK == 0 || got.Lost+got.Refused == 0 || got.Failed != 0 {
		t.Fatalf("load across one executor's exit: %+v", got)
	}
}

func TestLoadRefusesAnUnboundedRun(t *testing.T) {
	for _, args := range [][]string{{"http://127.0.0.1:1/", "0", "1"}, {"http://127.0.0.1:1/", "65", "1"},
		{"http://127.0.0.1:1/", "1", "601"}, {"http://127.0.0.1:1/", "1", "-1"}} {
		if out, err := self(t, append([]string{"load"}, args...)...); err == nil {
			t.Errorf("load %v ran: %s", args, out)
		}
	}
}
