package views

import (
	"strconv"
	"time"
)

// StorageView is the view model of the storage page: the embedded store's
// tiers, ingest rate and downsampler state.
type StorageView struct {
	Layout LayoutView
	// Embedded is false in remote mode, where the page only says so.
	Embedded         bool
	SamplesPerSecond float64
	Downsampled      int64
	LastError        string
	Tiers            []StorageTierRow
	Now              time.Time
	// Coverage is the source's metric coverage and GPU join; nil when
	// the telemetry cannot report it.
	Coverage *CoverageView
	// Detector is the detector's last round; nil when it is off.
	Detector *DetectorRound
	// Ingest is the scraper's and DCGM collector's pace (embedded mode).
	Ingest IngestPace
}

// IngestPace is how the embedded scraper and DCGM collector keep their
// schedule: targets scrape in a bounded pool, and a scrape or collection
// still running at its next slot skips that slot.
type IngestPace struct {
	Targets, Concurrency   int
	Scrapes, Skipped, Slow int64
	LastSkip               time.Time
	DCGM                   bool
	DCGMCollections        int64
	DCGMSkipped            int64
	LastDCGMSkip           time.Time
	// Behind is true when a slot was skipped in the last few minutes.
	Behind bool
}

// DetectorRound is the dynamic-threshold detector's last finished round.
type DetectorRound struct {
	Ran                    bool // false before the first round ends
	Began                  time.Time
	Took, Interval         time.Duration
	Scopes, Points, Firing int
	// Warmed counts the scopes whose history the round read first.
	Warmed int
	// Behind is true when the round took longer than its interval.
	Behind bool
}

// TookText is the round's duration, rounded for reading.
func (d DetectorRound) TookText() string {
	if d.Took < time.Second {
		return d.Took.Round(time.Millisecond).String()
	}
	return d.Took.Round(10 * time.Millisecond).String()
}

// StorageTierRow is one tier of the embedded store.
type StorageTierRow struct {
	Name       string
	Resolution time.Duration // 0 for raw
	Retention  time.Duration
	Series     uint64
	DiskBytes  int64
	Oldest     time.Time
	Watermark  time.Time
	Lag        time.Duration
}

// ResolutionText is "scrape interval" for raw, else the resolution.
func (r StorageTierRow) ResolutionText() string {
	if r.Resolution == 0 {
		return "scrape interval"
	}
	return FormatDuration(r.Resolution)
}

// LagText is the downsampler lag, or "—" for raw or before the first run.
func (r StorageTierRow) LagText() string {
	if r.Watermark.IsZero() {
		return "—"
	}
	return FormatDuration(r.Lag.Round(time.Second))
}

// DiskText renders the tier's disk use in binary units.
func (r StorageTierRow) DiskText() string { return FormatBytes(r.DiskBytes) }

// SeriesText renders the series count.
func (r StorageTierRow) SeriesText() string { return strconv.FormatUint(r.Series, 10) }

// RateText renders the ingest rate.
func (v StorageView) RateText() string {
	return strconv.FormatFloat(v.SamplesPerSecond, 'f', 1, 64) + " samples/s"
}
