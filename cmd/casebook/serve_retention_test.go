package main

import (
	"io"
	"testing"
	"time"
)

func TestParseServeRetentions(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		args    []string
		ok      bool
		wantRaw time.Duration
	}{
		{nil, true, 24 * time.Hour},
		{[]string{"--retention-raw", "48h", "--retention-1m", "1440h"}, true, 48 * time.Hour},
		{[]string{"--retention-raw", "30m"}, false, 0},
		{[]string{"--retention-raw", "48h", "--retention-1m", "24h"}, false, 0},
		{[]string{"--retention-1h", "100h"}, false, 0},
	}
	for _, tc := range tests {
		c, err := parseServe(tc.args, noEnv, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok=%v", tc.args, err, tc.ok)
			continue
		}
		if tc.ok && c.RetentionRaw != tc.wantRaw {
			t.Errorf("%q: raw retention %s, want %s", tc.args, c.RetentionRaw, tc.wantRaw)
		}
	}
}
