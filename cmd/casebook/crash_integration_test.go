//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/store"
)

// Crash run bounds.
const (
	crashRounds  = 4
	crashWorkers = 6
	crashMaxRun  = 1500 * time.Millisecond // longest storm before a kill
)

// TestServeSurvivesSIGKILL runs a real `casebook serve` under a storm of
// Alertmanager webhooks and kills it with SIGKILL at random moments,
// restarting it on the same data directory each time. Alertmanager
// resends what it got no reply for, so every round starts by resending the
// previous round's unanswered messages. At the end every alert the webhook
// acknowledged is in the archive exactly once, under the incident its
// reply named, and no alert is stored twice.
func TestServeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash run builds and starts casebook several times")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const token = "crash-run-webhook-token"
	seed := uint64(time.Now().UnixNano())
	t.Logf("crash run seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	bin := testenv.GoBuild(t, ".", "casebook", "sqlite_fts5")
	port := testenv.FreePort(t)
	data := t.TempDir()
	// No demo back-fill: an unreachable target makes start-up fast, and
	// incidents still open (their capture errors are recorded).
	args := []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data", data,
		"--targets", "http://127.0.0.1:1/metrics", "--detect", "off", "--webhook-token", token, "--log-level", "warn"}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: crashWorkers}}
	startsAt := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)

	var (
		mu        sync.Mutex
		acked     = map[string]int64{} // fingerprint -> incident
		conflicts []string
		pending   [][]string // messages without a reply, resent next round
		msgs      atomic.Int64
		killedMid int
	)
	record := func(fps []string, status int, body []byte) bool {
		if status != http.StatusOK {
			return false
		}
		var r struct{ Alerts []incident.AlertResult }
		if json.Unmarshal(body, &r) != nil || len(r.Alerts) != len(fps) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		for _, a := range r.Alerts {
			if a.IncidentID == 0 {
				conflicts = append(conflicts, fmt.Sprintf("%s acknowledged without an incident: %s %s", a.Fingerprint, a.Status, a.Reason))
				continue
			}
			if id, ok := acked[a.Fingerprint]; ok && id != a.IncidentID {
				conflicts = append(conflicts, fmt.Sprintf("%s acknowledged as incident %d, then %d", a.Fingerprint, id, a.IncidentID))
			}
			acked[a.Fingerprint] = a.IncidentID
		}
		return true
	}
	send := func(fps []string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/api/v1/alerts/alertmanager", port),
			bytes.NewReader(alertMessage("crash-model", fps, startsAt)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		status, body, _ := do(client, req)
		return status, body
	}

	for round := range crashRounds {
		cb := testenv.StartReady(t, fmt.Sprintf("casebook serve (round %d)", round), bin, port, "/healthz", 60*time.Second, args...)
		// Alertmanager retries the messages it got no answer for.
		retry := pending
		pending = nil
		for _, fps := range retry {
			status, body := send(fps)
			if !record(fps, status, body) {
				cb.Fatalf(t, "round %d: resent message %v: HTTP %d %.200s", round, fps, status, body)
			}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range crashWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					msgs.Add(1)
					fps := []string{fmt.Sprintf("crash-%d-%d-%d-a", round, w, i), fmt.Sprintf("crash-%d-%d-%d-b", round, w, i)}
					status, body := send(fps)
					if !record(fps, status, body) {
						mu.Lock()
						pending = append(pending, fps)
						mu.Unlock()
						return // the server is gone
					}
				}
			}()
		}
		time.Sleep(time.Duration(100+rng.IntN(int(crashMaxRun/time.Millisecond))) * time.Millisecond)
		cb.Kill()
		close(stop)
		wg.Wait()
		mu.Lock()
		killedMid += len(pending)
		mu.Unlock()
		if ctx.Err() != nil {
			t.Fatal("crash run timed out")
		}
	}
	// A last start: resend what the last kill left unanswered, then stop
	// cleanly.
	cb := testenv.StartReady(t, "casebook serve (final)", bin, port, "/healthz", 60*time.Second, args...)
	for _, fps := range pending {
		status, body := send(fps)
		if !record(fps, status, body) {
			cb.Fatalf(t, "final resend %v: HTTP %d %.200s", fps, status, body)
		}
	}
	cb.Stop()
	if len(conflicts) > 0 {
		t.Errorf("%d conflicting acknowledgements:\n%s", len(conflicts), strings.Join(conflicts[:min(10, len(conflicts))], "\n"))
	}

	st, err := store.Open(ctx, filepath.Join(data, "casebook.db"))
	if err != nil {
		t.Fatalf("open the archive after the crashes: %v", err)
	}
	defer st.Close()
	stored := map[string][]int64{}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := st.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Items {
			if s.Alert != nil {
				stored[s.Alert.Fingerprint] = append(stored[s.Alert.Fingerprint], s.ID)
			}
		}
		if page.Next == (store.Cursor{}) {
			break
		}
		f.After = page.Next
	}
	var wrong []string
	for fp, id := range acked {
		if ids := stored[fp]; len(ids) != 1 || ids[0] != id {
			wrong = append(wrong, fmt.Sprintf("%s: acknowledged as %d, stored as %v", fp, id, ids))
		}
	}
	for fp, ids := range stored {
		if len(ids) > 1 {
			wrong = append(wrong, fmt.Sprintf("%s stored %d times: %v", fp, len(ids), ids))
		}
		if _, ok := acked[fp]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s stored as %v but never acknowledged, even on resend", fp, ids))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Errorf("%d alerts not stored exactly once:\n%s", len(wrong), strings.Join(wrong[:min(len(wrong), 10)], "\n"))
	}
	if len(acked) == 0 {
		t.Fatal("no alert was acknowledged: the storm never reached the server")
	}
	t.Logf("%d rounds killed with SIGKILL, %d messages sent, %d alerts acknowledged, %d messages cut off by a kill and resent",
		crashRounds, msgs.Load(), len(acked), killedMid)
}
