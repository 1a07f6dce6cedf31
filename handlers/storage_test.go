package handlers_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/watch"
	"github.com/casebook/casebook/web"
)

// fakeDetector reports a fixed last round.
type fakeDetector struct {
	r  watch.RoundReport
	ok bool
}

func (d fakeDetector) LastRound() (watch.RoundReport, bool) { return d.r, d.ok }

// storageTelemetry is the fake telemetry with an embedded store.
type storageTelemetry struct {
	*handlerstest.Telemetry
	stats telemetry.StorageStats
	err   error
}

func (s storageTelemetry) Storage() (telemetry.StorageStats, error) { return s.stats, s.err }

func TestStoragePage(t *testing.T) {
	tel := sharedTel()
	now := tel.End
	stats := telemetry.StorageStats{
		SamplesPerSecond: 76800,
		Tiers: []telemetry.TierStats{
			{Name: telemetry.TierRaw, Retention: 24 * time.Hour, Series: 76800, DiskBytes: 3 << 30, Oldest: now.Add(-23 * time.Hour)},
			{Name: telemetry.TierMinute, Resolution: time.Minute, Retention: 30 * 24 * time.Hour, Series: 215000, DiskBytes: 12 << 20,
				Oldest: now.Add(-29 * 24 * time.Hour), Watermark: now.Add(-95 * time.Second), Lag: 95 * time.Second},
			{Name: telemetry.TierHour, Resolution: time.Hour, Retention: 365 * 24 * time.Hour, Series: 215000, DiskBytes: 2 << 20},
		},
	}
	tests := []struct {
		name       string
		tel        web.Options
		want       []string
		wantAbsent []string
	}{
		{
			name: "embedded",
			tel:  web.Options{Telemetry: tel, Storage: storageTelemetry{Telemetry: tel, stats: stats}},
			want: []string{`data-testid="storage-tiers"`, `data-tier="raw"`, `data-tier="1m"`, `data-tier="1h"`,
				"76800.0 samples/s", "3 GiB", "12 MiB", "1m35s", "365d", `class="active" data-testid="nav-storage"`},
			wantAbsent: []string{`data-testid="storage-remote"`, `data-testid="storage-error"`},
		},
		{
			name: "downsampler failing",
			tel:  web.Options{Telemetry: tel, Storage: storageTelemetry{Telemetry: tel, stats: telemetry.StorageStats{LastError: "disk full"}}},
			want: []string{`data-testid="storage-error"`, "disk full"},
		},
		{
			name: "ingest keeping up",
			tel: web.Options{Telemetry: tel, Storage: storageTelemetry{Telemetry: tel, stats: telemetry.StorageStats{Ingest: telemetry.IngestStats{
				Targets: 500, Concurrency: 8, Scrapes: 600, LastSkip: now.Add(-10 * time.Minute), Skipped: 4}}}},
			want:       []string{`data-testid="ingest-pace"`, `data-targets="500"`, `data-skipped="4"`, "500 scrape targets, at most 8 scraped at once: 600 scrapes, 4 scheduled"},
			wantAbsent: []string{`data-testid="ingest-behind"`, "DCGM:"},
		},
		{
			name: "ingest falling behind",
			tel: web.Options{Telemetry: tel, Storage: storageTelemetry{Telemetry: tel, stats: telemetry.StorageStats{Ingest: telemetry.IngestStats{
				Targets: 500, Concurrency: 8, Scrapes: 600, Skipped: 12, Slow: 3, LastSkip: now.Add(-30 * time.Second),
				DCGM: true, DCGMCollections: 90, DCGMSkipped: 7, LastDCGMSkip: now.Add(-time.Minute)}}}},
			want: []string{`data-testid="ingest-behind"`, `data-behind`, `data-dcgm-skipped="7"`, "Ingest falls behind", "Last skipped scrape",
				"DCGM: 90 collections, 7 seconds skipped", "Last skipped DCGM collection"},
		},
		{
			name:       "remote",
			tel:        web.Options{Telemetry: tel, Storage: storageTelemetry{Telemetry: tel, err: telemetry.ErrNoTiers}},
			want:       []string{`data-testid="storage-remote"`},
			wantAbsent: []string{`data-testid="storage-tiers"`},
		},
		{
			name: "detector keeping up",
			tel: web.Options{Telemetry: tel, Detector: fakeDetector{ok: true, r: watch.RoundReport{
				RoundStats: watch.RoundStats{Scopes: 144, Points: 4320, Firing: 2}, Began: now.Add(-20 * time.Second),
				Took: 1250 * time.Millisecond, Interval: time.Minute}}},
			want:       []string{`data-testid="detector-round"`, `data-ran`, `data-scopes="144"`, `data-took-ms="1250"`, "144 scopes, 4,320 points, 2 alerts firing", "1.25s of its 1m interval"},
			wantAbsent: []string{`data-testid="detector-behind"`},
		},
		{
			name: "detector falling behind",
			tel: web.Options{Telemetry: tel, Detector: fakeDetector{ok: true, r: watch.RoundReport{
				RoundStats: watch.RoundStats{Scopes: 500}, Began: now.Add(-90 * time.Second), Took: 75 * time.Second, Interval: time.Minute}}},
			want: []string{`data-behind`, `data-testid="detector-behind"`, "1m15s of its 1m interval"},
		},
		{
			name: "detector warming up",
			tel: web.Options{Telemetry: tel, Detector: fakeDetector{ok: true, r: watch.RoundReport{
				RoundStats: watch.RoundStats{Scopes: 500, Warmed: 500}, Began: now.Add(-3 * time.Minute), Took: 150 * time.Second, Interval: time.Minute}}},
			want:       []string{`data-warmed="500"`, "read the history of 500 new scopes first"},
			wantAbsent: []string{`data-behind`, `data-testid="detector-behind"`},
		},
		{
			name:       "detector before its first round",
			tel:        web.Options{Telemetry: tel, Detector: fakeDetector{}},
			want:       []string{`data-testid="detector-round"`, "has not finished its first round"},
			wantAbsent: []string{`data-ran`},
		},
		{
			name:       "detector off",
			tel:        web.Options{Telemetry: tel},
			wantAbsent: []string{`data-testid="detector-round"`},
		},
		{
			name: "telemetry without storage",
			tel:  web.Options{Telemetry: tel},
			want: []string{`data-testid="storage-remote"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tel, func(o *web.Options) { o.Storage, o.Detector = tc.tel.Storage, tc.tel.Detector })
			res := f.do(t, http.MethodGet, "/storage", nil, nil)
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tc.wantAbsent {
				if strings.Contains(res.body, w) {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}
