package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Prometheus starts a real Prometheus with the given configuration file
// content and returns it once /-/ready answers.
func Prometheus(t testing.TB, config string) *Process {
	t.Helper()
	return StartPrometheusOnPort(t, config, FreePort(t))
}

// StartPrometheusOnPort is Prometheus on a port chosen beforehand, for
// components that must know its URL before it starts.
func StartPrometheusOnPort(t testing.TB, config string, port int) *Process {
	t.Helper()
	dir := t.TempDir()
	return startPrometheus(t, dir, filepath.Join(dir, "data"), config, port)
}

// PrometheusWithHistory starts a real Prometheus whose storage already
// holds the samples of an OpenMetrics file (with a timestamp on every
// sample), turned into TSDB blocks by Debian's promtool (`promtool tsdb
// create-blocks-from openmetrics`), the way an operator back-fills one.
func PrometheusWithHistory(t testing.TB, config, openMetricsFile string) *Process {
	t.Helper()
	promtool := LookBinary(t, "promtool", "prometheus")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", openMetricsFile, data).CombinedOutput()
	if err != nil {
		t.Fatalf("testenv: promtool create-blocks-from openmetrics: %v\n%s", err, lastLines(string(out), 20))
	}
	return startPrometheus(t, dir, data, config, FreePort(t))
}

func startPrometheus(t testing.TB, dir, data, config string, port int) *Process {
	t.Helper()
	bin := LookBinary(t, "prometheus", "prometheus")
	cfg := WriteFile(t, dir, "prometheus.yml", config)
	return Start(t, "prometheus", bin, port, "/-/ready",
		"--config.file="+cfg,
		"--storage.tsdb.path="+data,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--web.enable-lifecycle",
	)
}

// Alertmanager starts a real Alertmanager (Debian's prometheus-alertmanager)
// with the given configuration, clustering off.
func Alertmanager(t testing.TB, config string) *Process {
	t.Helper()
	bin := LookBinary(t, "prometheus-alertmanager", "prometheus-alertmanager")
	port := FreePort(t)
	dir := t.TempDir()
	cfg := WriteFile(t, dir, "alertmanager.yml", config)
	return Start(t, "alertmanager", bin, port, "/-/ready",
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--cluster.listen-address=",
	)
}

// ChromiumPath returns Debian's chromium binary or fails naming the package.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	return LookBinary(t, "chromium", "chromium")
}

// ChromiumFlags are the flags every browser test starts Chromium with: no
// sandbox (root in CI), no GPU, and no background network traffic, which
// this machine's closed network would refuse.
var ChromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions",
}
