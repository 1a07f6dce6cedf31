package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/watch"
)

// StorageReporter describes the embedded metric store.
// *telemetry.Telemetry implements it.
type StorageReporter interface {
	Storage() (telemetry.StorageStats, error)
}

// DetectorReporter reports the detector's last finished round.
// *watch.Watcher implements it.
type DetectorReporter interface {
	LastRound() (watch.RoundReport, bool)
}

// Storage serves the storage page: series, ingest rate, and per tier disk
// use, oldest sample and downsampler lag.
type Storage struct{ d *Deps }

// Show renders the storage page.
func (h *Storage) Show(c echo.Context) error {
	vm := views.StorageView{Layout: h.d.layout(i18n.T(c.Request().Context(), "nav.storage"), views.NavStorage), Now: h.d.Now()}
	vm.Coverage = h.d.coverageView(c.Request().Context(), metrics.Scope{})
	if h.d.Detector != nil {
		vm.Detector = &views.DetectorRound{}
		if r, ok := h.d.Detector.LastRound(); ok {
			vm.Detector = &views.DetectorRound{Ran: true, Began: r.Began, Took: r.Took, Interval: r.Interval,
				Scopes: r.Scopes, Points: r.Points, Firing: r.Firing, Warmed: r.Warmed, Behind: r.Behind()}
		}
	}
	if h.d.Storage != nil {
		st, err := h.d.Storage.Storage()
		switch {
		case errors.Is(err, telemetry.ErrNoTiers):
		case err != nil:
			return fmt.Errorf("storage: %w", err)
		default:
			vm.Embedded = true
			vm.SamplesPerSecond = st.SamplesPerSecond
			vm.Downsampled = st.Downsampled
			vm.LastError = st.LastError
			in := st.Ingest
			vm.Ingest = views.IngestPace{Targets: in.Targets, Concurrency: in.Concurrency, Scrapes: in.Scrapes, Skipped: in.Skipped, Slow: in.Slow,
				LastSkip: in.LastSkip, DCGM: in.DCGM, DCGMCollections: in.DCGMCollections, DCGMSkipped: in.DCGMSkipped,
				LastDCGMSkip: in.LastDCGMSkip, Behind: in.Behind(vm.Now)}
			for _, t := range st.Tiers {
				vm.Tiers = append(vm.Tiers, views.StorageTierRow{
					Name: t.Name, Resolution: t.Resolution, Retention: t.Retention, Series: t.Series,
					DiskBytes: t.DiskBytes, Oldest: t.Oldest, Watermark: t.Watermark, Lag: t.Lag,
				})
			}
		}
	}
	return render(c, http.StatusOK, views.StoragePage(vm))
}
