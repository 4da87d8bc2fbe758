// executor: the playground's stand-in for the ubuntu-swe sandbox executor (not the real image).
//
//	executor [serve]              serve the executor API on $DOCKYARD_EXECUTOR_PORT (default 9090)
//	executor post URL JSON        POST JSON to URL, print the answer; exit 0 on HTTP 200
//	executor get URL              GET URL, print the answer; exit 0 on HTTP 200
//	executor dial HOST:PORT [S]   open a TCP connection within S seconds (default 3); exit 0 if it opens
//	executor alloc MIB            allocate and touch MIB MiB of memory, then exit 0
//	executor listen ADDR TEXT     serve TEXT over HTTP on ADDR (a stand-in listener for tests)
//	executor syscall NR [ARG...]  make raw syscall NR (x86-64 numbers, up to six integer arguments) and
//	                              print "ok R" or "errno N NAME"; exit 0 either way (a kernel probe)
//	executor load URL C S [JSON]  C workers POST JSON (default {"argv": ["true"]}) to URL for S seconds,
//	                              one connection per task; print the counts and latencies as JSON (load.go)
//
// API: GET /health answers "ok"; POST /task/submit takes {"command": "sh text"} or
// {"argv": ["prog", "arg"]} with an optional "timeout" in seconds (default 60) and answers
// {"exit_code": N, "output": "...", "stdout": "...", "stderr": "..."}. The command runs in
// $DOCKYARD_WORK_DIR when that exists. SIGUSR1 closes the listener (the process stays up and
// stops answering), so tests can watch the kubelet's liveness probe restart it.
//
// SIGTERM (or SIGINT) drains, the contract of docs/sandbox-pool.md: the listener closes (new
// connections are refused), /health and any task still arriving on an open connection answer 503,
// the tasks in flight run to their end and get their answers (with Connection: close), then the
// process exits 0. The kubelet's grace period bounds the drain; a second signal exits at once (1).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

type task struct {
	Command string   `json:"command"`
	Argv    []string `json:"argv"`
	Timeout float64  `json:"timeout"`
}

type result struct {
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Error    string `json:"error,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// executor answers the API; draining is set on SIGTERM, inFlight counts the tasks running.
type executor struct {
	draining atomic.Bool
	inFlight atomic.Int64
}

// refuseWhileDraining answers 503 (nothing ran, so the caller may retry elsewhere) once draining.
func (e *executor) refuseWhileDraining(w http.ResponseWriter) bool {
	if !e.draining.Load() {
		return false
	}
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, result{ExitCode: -1, Error: "executor draining (SIGTERM): not run, retry on another replica"})
	return true
}

func (e *executor) health(w http.ResponseWriter, _ *http.Request) {
	if e.draining.Load() {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "draining\n")
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (e *executor) submit(w http.ResponseWriter, r *http.Request) {
	if e.refuseWhileDraining(w) {
		return
	}
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	run(w, r)
}

func (e *executor) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", e.health)
	mux.HandleFunc("/task/submit", e.submit)
	return mux
}

func run(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, result{ExitCode: -1, Error: "POST a JSON task"})
		return
	}
	var t task
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&t); err != nil {
		writeJSON(w, http.StatusBadRequest, result{ExitCode: -1, Error: "body is not a JSON task: " + err.Error()})
		return
	}
	argv := t.Argv
	if len(argv) == 0 {
		if t.Command == "" {
			writeJSON(w, http.StatusBadRequest, result{ExitCode: -1, Error: `give "command" (shell text) or "argv" (a list)`})
			return
		}
		argv = []string{"/bin/sh", "-c", t.Command}
	}
	timeout := 60 * time.Second
	if t.Timeout > 0 {
		timeout = time.Duration(t.Timeout * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if dir := os.Getenv("DOCKYARD_WORK_DIR"); dir != "" {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			cmd.Dir = dir
		}
	}
	var out, stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, &stdout)
	cmd.Stderr = io.MultiWriter(&out, &stderr)
	err := cmd.Run()
	res := result{Output: out.String(), Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
			res.Error = "killed by " + ws.Signal().String()
		}
	default:
		res.ExitCode, res.Error = 127, err.Error()
	}
	writeJSON(w, http.StatusOK, res)
}

func serve() error {
	port := os.Getenv("DOCKYARD_EXECUTOR_PORT")
	if port == "" {
		port = "9090"
	}
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return err
	}
	e := &executor{}
	srv := &http.Server{Handler: e.mux(), ReadHeaderTimeout: 30 * time.Second}
	drained := make(chan error, 1)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			name := map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[s]
			switch {
			case s == syscall.SIGUSR1:
				fmt.Fprintln(os.Stderr, "executor: SIGUSR1, no longer answering")
				_ = ln.Close()
			case e.draining.Load():
				fmt.Fprintf(os.Stderr, "executor: %s while draining, exiting with %d task(s) in flight\n", name, e.inFlight.Load())
				os.Exit(1)
			default:
				fmt.Fprintf(os.Stderr, "executor: %s, draining %d task(s) in flight\n", name, e.inFlight.Load())
				e.draining.Store(true)
				srv.SetKeepAlivesEnabled(false)
				// Shutdown closes the listener and the idle connections, then waits for the active ones:
				// the tasks in flight, whose request contexts it leaves alone.
				go func() { drained <- srv.Shutdown(context.Background()) }()
			}
		}
	}()
	fmt.Fprintf(os.Stderr, "executor: serving on %s\n", ln.Addr())
	err = srv.Serve(ln)
	if errors.Is(err, net.ErrClosed) && !e.draining.Load() {
		err = <-drained // SIGUSR1: stay up, silent (the liveness probe decides), until a SIGTERM drains
	} else if errors.Is(err, http.ErrServerClosed) {
		err = <-drained
	}
	if err == nil {
		fmt.Fprintln(os.Stderr, "executor: drained, exiting")
	}
	return err
}

func request(method, url, body string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

func alloc(mib int) {
	chunks := make([][]byte, 0, mib)
	for i := 0; i < mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		chunks = append(chunks, b)
	}
	fmt.Printf("allocated %d MiB\n", len(chunks))
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"serve"}
	}
	var err error
	switch {
	case args[0] == "serve":
		err = serve()
	case args[0] == "post" && len(args) == 3:
		err = request(http.MethodPost, args[1], args[2])
	case args[0] == "get" && len(args) == 2:
		err = request(http.MethodGet, args[1], "")
	case args[0] == "dial" && (len(args) == 2 || len(args) == 3):
		secs := 3.0
		if len(args) == 3 {
			secs, _ = strconv.ParseFloat(args[2], 64)
		}
		var c net.Conn
		if c, err = net.DialTimeout("tcp", args[1], time.Duration(secs*float64(time.Second))); err == nil {
			fmt.Println("connected to", args[1])
			c.Close()
		}
	case args[0] == "alloc" && len(args) == 2:
		var mib int
		if mib, err = strconv.Atoi(args[1]); err == nil {
			alloc(mib)
		}
	case args[0] == "syscall" && len(args) >= 2 && len(args) <= 8:
		err = probeSyscall(args[1:])
	case args[0] == "load" && (len(args) == 4 || len(args) == 5):
		err = load(args[1:])
	case args[0] == "listen" && len(args) == 3:
		text := args[2]
		err = http.ListenAndServe(args[1], http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, text+"\n")
		}))
	default:
		err = fmt.Errorf("usage: executor [serve] | post URL JSON | get URL | dial HOST:PORT [SECONDS] | alloc MIB | listen ADDR TEXT | syscall NR [ARG...] | load URL CONCURRENCY SECONDS [JSON]")
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		os.Exit(1)
	}
}
