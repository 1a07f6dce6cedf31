package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// TestSnapshotHistoryFromStepAlignedBackend: VictoriaMetrics rounds a
// range query's start down to a multiple of its step, so its samples do
// not fall on start + k*step when the snapshot's instant is not on a whole
// minute. The history must still fill from them.
func TestSnapshotHistoryFromStepAlignedBackend(t *testing.T) {
	groups, err := os.ReadFile(filepath.Join("testdata", "api_group_matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		q := r.Form.Get("query")
		if strings.Contains(q, "group by (model_name, pod, casebook_engine)") {
			_, _ = w.Write(groups)
			return
		}
		if r.URL.Path == "/api/v1/query" {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
			return
		}
		if !strings.Contains(q, "vllm:num_requests_waiting") {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
			return
		}
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		var vals []string
		for ts := float64(int64(start/step)) * step; ts <= end; ts += step {
			vals = append(vals, fmt.Sprintf(`[%.0f,"3"]`, ts))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[%s]}]}}`, strings.Join(vals, ","))
	}))
	defer srv.Close()
	tel, err := Open(context.Background(), Options{PrometheusURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	at := time.Unix(1764480000, 0).Add(37 * time.Second) // not on a whole minute
	snap, err := tel.Snapshot(context.Background(), metrics.Scope{Model: "llama-8b"}, at)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range snap.History {
		if v, ok := p.Values.Get(metrics.QueueDepth); ok && v == 3 {
			n++
		}
	}
	if n < historyPoints-1 {
		t.Errorf("queue depth in %d of %d history points, want at least %d", n, len(snap.History), historyPoints-1)
	}
}
