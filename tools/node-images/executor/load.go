package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The bounded load generator: a fixed number of workers, a fixed time box, one URL. Each task is a
// POST on a connection of its own (so the Service balances every task), and every answer is counted.
const (
	maxWorkers = 64
	maxSeconds = 600
)

// tally is what a load run prints: every task sent ends in exactly one of ok, failed, refused, lost.
type tally struct {
	Sent    int      `json:"sent"`
	OK      int      `json:"ok"`      // HTTP 200 and the task's exit code 0
	Failed  int      `json:"failed"`  // HTTP 200, the task ran and exited non-zero
	Refused int      `json:"refused"` // HTTP 503: a draining executor did not run it (retryable)
	Lost    int      `json:"lost"`    // no answer: refused or reset connection, timeout, other HTTP status
	Seconds float64  `json:"seconds"`
	PerSec  float64  `json:"tasks_per_s"`
	P50ms   float64  `json:"p50_ms"`
	P99ms   float64  `json:"p99_ms"`
	Errors  []string `json:"errors"` // the first few losses, as the client saw them
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}

func load(args []string) error {
	url, body := args[0], `{"argv": ["true"]}`
	workers, err := strconv.Atoi(args[1])
	if err != nil || workers < 1 || workers > maxWorkers {
		return fmt.Errorf("load: CONCURRENCY must be 1..%d, not %q", maxWorkers, args[1])
	}
	secs, err := strconv.ParseFloat(args[2], 64)
	if err != nil || secs <= 0 || secs > maxSeconds {
		return fmt.Errorf("load: SECONDS must be in (0, %d], not %q", maxSeconds, args[2])
	}
	if len(args) == 4 {
		body = args[3]
	}
	client := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		mu        sync.Mutex
		t         tally
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(time.Duration(secs * float64(time.Second)))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				sent := time.Now()
				outcome, detail := submit(client, url, body)
				took := time.Since(sent)
				mu.Lock()
				t.Sent++
				switch outcome {
				case "ok":
					t.OK++
					latencies = append(latencies, took)
				case "failed":
					t.Failed++
				case "refused":
					t.Refused++
				default:
					t.Lost++
					if len(t.Errors) < 5 {
						t.Errors = append(t.Errors, detail)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Seconds = time.Since(start).Seconds()
	t.PerSec = float64(t.OK) / t.Seconds
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	t.P50ms, t.P99ms = percentile(latencies, 0.50), percentile(latencies, 0.99)
	if t.Errors == nil {
		t.Errors = []string{}
	}
	return json.NewEncoder(os.Stdout).Encode(t)
}

// submit sends one task and says how it ended: ok, failed, refused or lost (with what was seen).
func submit(client *http.Client, url, body string) (string, string) {
	resp, err := client.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return "lost", err.Error()
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "lost", "reading the answer: " + err.Error()
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		return "refused", ""
	default:
		return "lost", fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		return "lost", "answer is not a task result: " + err.Error()
	}
	if r.ExitCode != 0 {
		return "failed", ""
	}
	return "ok", ""
}
