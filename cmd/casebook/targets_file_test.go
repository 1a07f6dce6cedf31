package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/casebook/casebook/telemetry"
)

func TestReadTargetsFile(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		want    []telemetry.Target
		wantErr string
	}{
		{
			name: "groups with paths and intervals",
			body: `[{"targets": ["10.0.0.1:8000", "10.0.0.2:8000"], "labels": {"pod": "vllm-0"}},
				{"targets": ["10.0.0.1:9400"], "labels": {"__metrics_path__": "gpus/vllm-0/metrics", "__scheme__": "https", "__scrape_interval__": "1s", "pod": "vllm-0"}}]`,
			want: []telemetry.Target{
				{URL: "http://10.0.0.1:8000/metrics", Labels: map[string]string{"pod": "vllm-0"}},
				{URL: "http://10.0.0.2:8000/metrics", Labels: map[string]string{"pod": "vllm-0"}},
				{URL: "https://10.0.0.1:9400/gpus/vllm-0/metrics", Labels: map[string]string{"pod": "vllm-0", "__scrape_interval__": "1s"}},
			},
		},
		{name: "empty list", body: `[]`},
		{name: "not a list", body: `{"targets": []}`, wantErr: "not a file_sd JSON list"},
		{name: "URL instead of host", body: `[{"targets": ["http://h:1/metrics"]}]`, wantErr: `target "http://h:1/metrics" is not host:port`},
		{name: "bad scheme", body: `[{"targets": ["h:1"], "labels": {"__scheme__": "ftp"}}]`, wantErr: `__scheme__ "ftp"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "targets.json")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readTargetsFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errUsage) {
					t.Fatalf("err = %v, want a usage error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("targets = %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := readTargetsFile(filepath.Join(t.TempDir(), "missing.json")); err == nil || !errors.Is(err, errUsage) {
		t.Errorf("missing file: err = %v, want a usage error", err)
	}
}
