// Package forecast gives every metric series a dynamic threshold: a
// seasonal forecast with a prediction band, and a detector that alerts
// when a series leaves the band in its bad direction.
//
// # The model
//
// Fit builds a Prophet-style additive model of one series,
//
//	y(t) = level + trend(t) + steps(t) + daily(t) + weekly(t) + noise,
//
// where the trend is piecewise linear with Changepoints (default 5) hinges
// spread over the first 80% of the history, the steps are level shifts the
// detector found, and the daily (6 Fourier pairs) and weekly (3 pairs)
// cycles are in wall-clock time, so the sampling interval does not matter.
// Values are standardised by their median and MAD, histories longer than
// MaxRows (2,500) samples are reduced to medians of equal time bins, and
// the coefficients are estimated by ridge-regularised least squares
// (Gaussian priors: seasonal terms 1, changepoints 0.5, slope 5 standard
// units) reweighted six times with Huber weights (k = 1.345), so anomalies
// inside the history barely move the fit.
//
// The band is the forecast plus or minus Z (default 3) robust standard
// errors: 1.4826 times the MAD of the residuals of every raw sample, per
// hour of day when the spread varies over the day (shrunk towards the
// overall value). The half-width never falls below RelFloor (2%) of the
// forecast or AbsFloor, which the detector takes from the metric's unit
// (UnitFloor: 0.5 ms, 0.005 for ratios, 1 count, 15 MHz ...).
//
// The model degrades with short history: under MinSpan (3 h) it is a
// robust level and spread; under a day a level and linear trend; under two
// days it adds the daily cycle; from two days on it has every term.
//
// # The detector
//
// Detector.Observe takes points in time order per metric, judges each
// against a model fitted on earlier points only, and raises an alert when
// Consecutive (default 3) points in a row leave the band in the metric's
// bad direction (metrics.Metric.Bad; Both means either way). The alert ends
// after as many points back in the band. Models are refitted every hour,
// and while the history is young each time it doubles. NaN, duplicate and
// out-of-order points are counted and skipped; a gap resets the run count;
// a departure that persists for ShiftPoints (120) points is a level shift:
// the series is refitted with a level step (or, for a change of scale such
// as a unit change, restarted from the new data) and the event says so,
// so a persistent change does not alert forever.
//
// GroupAlerts turns the alerts of one scope that fired in the same minute
// into one group, the unit that opens one incident. Cache keeps fitted
// models per series for callers that read history from a store, refitting
// them when older than a set age.
//
// Backtest compares the detector with fixed thresholds on simulated weeks
// of catalog metrics with labelled anomaly windows (see Simulate for the
// generative model).
package forecast
