// Package forecast gives every metric series a dynamic threshold: a
// seasonal forecast with a prediction band, and a detector that alerts
// when a series leaves the band in its bad direction.
//
// # The model
//
// Fit builds a Prophet-style additive model of one series,
//
//	y(t) = level + trend(t) + steps(t) + daily(t) + weekly(t) + weekend(t) + noise,
//
// where the trend is piecewise linear with Changepoints (default 10) hinges
// spread over the first 80% of the history, the steps are level shifts the
// detector found, the daily (6 Fourier pairs) and weekly (3 pairs) cycles
// are in wall-clock time (UTC), so the sampling interval does not matter,
// and the weekend terms (a level and 4 daily pairs on Saturdays and
// Sundays, once the history covers a week) let the weekend day have its
// own shape. The cycles are found, not assumed (season.go): from three
// days of history on, they are fitted only when the hourly medians,
// less a day-wide moving average (the trend), correlate with themselves
// a day later, significantly (3/sqrt(pairs)) and materially (0.1, a
// tenth of the variance), at any sampling interval up to a few hours;
// without a daily cycle the model is the trend and steps alone, and the
// standard error is not read per hour of day. Values are standardised by their median and MAD, histories of
// more than MaxRows (1,500) samples are reduced to medians of equal time
// bins weighted by their counts, and the coefficients are estimated by
// ridge-regularised least squares (Gaussian priors in standard units:
// seasonal terms 1, changepoints 0.5, slope 5, steps 10) reweighted five
// times with Huber weights (k = 1.345), so anomalies in the history barely
// move the fit.
//
// The band is the forecast plus or minus Z (default 3) standard errors.
// The standard error is read from the residuals of the raw samples of the
// last week: the 95th percentile of their absolute deviation divided by
// 1.96, which equals the standard deviation for normal noise, sees heavy
// tails that the MAD misses, and is not moved far by up to 5% of
// anomalous points; per hour of day once the last week covers two days
// (shrunk towards the overall value with a weight of 30 samples). The
// half-width never falls below RelFloor (2%) of the forecast or AbsFloor,
// which the detector takes from the metric's unit (UnitFloor: 0.5 ms, 0.005
// for ratios, 1 count, 15 MHz ...), so a near-constant series does not
// alert on every wiggle.
//
// The model degrades with short history: under MinSpan (3 h) it is a
// robust level and spread; under a day a level and linear trend (held at
// its last value rather than extrapolated); under two days it adds the
// daily cycle; from two days on it has every term but the weekend ones,
// which need a week.
//
// # The detector
//
// Detector.Observe takes points in time order per metric, judges each
// against a model fitted on earlier points only, and raises an alert when
// Consecutive (default 3) points in a row leave the band in the metric's
// bad direction (metrics.Metric.Bad; Both means either way, and a run that
// swings from one side of the band to the other counts whole). With For
// set instead, the run is a duration, like a Prometheus rule's "for": as
// many points as cover For at the series' own sampling interval, never
// fewer than two (casebook detect uses For = 3 minutes, so 5-minute or
// hourly data alert on two points). Where one sample spans For, it
// alerts alone when it is SingleZ standard errors out (default 5.85, as
// improbable for normal noise as three points at the band's edge). The
// alert ends
// after Clear (default 5) points in a row back inside, or with For set
// once the series has been back inside for ClearFor (5 minutes: one
// point at 5-minute or hourly data), so hourly data does not hold an
// alert open for hours and miss the next anomaly. Two corrections use the
// detector's own one-step-ahead errors, taken only while no alert is open:
// the median error of the last LocalWindow (60) in-band points is added to
// the forecast, so a series running a little off its seasonal shape for
// hours does not alert on that; and when the robust spread of the last
// CalibrationWindow (1,440) errors exceeds the model's standard error, the
// band widens by the ratio (at most 4 times). Those errors also give the
// lag-1 correlation rho of the noise: one large shock in correlated noise
// decays over several points, so a run of Consecutive points fires only
// once its last point is EchoZ (2) conditional standard errors beyond the
// decaying echo of its first, (z_k - rho^k z_0) / sqrt(1 - rho^2k); a
// sustained shift passes at once or a point or two later. Some series
// leave their band routinely (a batch job's bursts several times a day):
// a run no deeper, within the band's half-width, than excursions the
// series made at least RoutinePerDay (2) times a day over the last week,
// or at the same time of day (within an hour) on two days and at least
// half of the last seven (a nightly job, too narrow for the Fourier
// terms), does not alert, and a deeper one does; Stats.Routine counts
// them.
//
// Every run long enough to alert carries Alert.Prob (Band.Prob in the
// trace): the probability of a run as deep under the series' own record
// of forecast errors, a conformal p-value, (1 + record windows of as many
// points at least as deep) / (1 + windows), calibrated whatever the
// shape of the noise (zero-inflated counts, bursts of every size), from
// 1 down to about 2.5e-4 with a full record, and the normal model's
// probability while the record covers less than a day. With MaxProb set
// (off by default), a run alerts only when Prob is at most MaxProb.
//
// With FalsePerDay set (off by default), a run also has to be rare in
// the series' own record: the depth of a run of k points is its
// shallowest point's distance from the forecast, and the record (every
// judged point's error, alerts included, once a day old; at most 4,032
// points) gives how many episodes a day went as deep, each episode (a
// stretch of k-point windows beyond the band) counted once, with a
// generalised Pareto tail beyond the deepest (an exponential one while
// the record holds fewer than ten episodes) and the normal model's rate
// before the record covers a day or when it holds no episode. The run alerts only when that rate is at
// most FalsePerDay; Alert.P and the trace carry it. A zero-inflated or
// bursty series, whose normal bursts are many standard errors out, then
// alerts on a burst far beyond its own bursts and not on the routine ones.
//
// With BurstyPerDay set instead (off by default), the same rule applies
// with that budget only to the series it suits, found from each refit's
// history (bursty.go): an
// intermittent series, at its minimum for at least a quarter of its
// samples (zero-inflated counts, an idle disk), or a heavy-tailed one,
// whose one tail reaches five times farther from the median than the
// other, (q99 - q50) / (q50 - q1) or its inverse (normal noise gives 1,
// an exponential 5.7). Other series keep their band alone.
//
// With NoveltyRank set (off by default), a run also has to pass a
// shape test (novelty.go). Each stretch of NoveltySpan (30 minutes, at
// least two points) is compared with every earlier stretch that does not
// overlap it, over about the last 10,080 points whatever the sampling
// interval; its novelty is the Euclidean distance to the nearest one (a
// left matrix profile), over the NoveltyRank quantile of the same distances of the
// series' past stretches, each entering that record a stretch late so a
// stretch never sets its own bar. A run alerts only when some stretch
// ending in it has a novelty of at least 1: a burst the series has made
// before has a near match and does not alert, however far out of the
// band, and a shape it never made does (Stats.Familiar counts the runs
// held back). With NoveltyAlone as well, a stretch NoveltyAlone times
// beyond the quantile alerts on its own, in band or out, once per novel
// episode (a flat line where the series always moves). With
// NoveltySustain N as well, an episode alerts only once N spans of its
// stretches are that far from every stretch ending more than N spans
// before them: one odd point makes one span of novel stretches as they
// slide over it, while a changed pattern, a drift or a flat line keeps
// making them, and judged against what came before it a lasting new
// behaviour does not match itself. The squared
// distances to every earlier stretch slide from one point to the next
// (the newest point in, the oldest out, computed afresh every 1,024
// points), so each point costs one pass over the kept points, about
// 25 us a point and 350 KB a series, allocated once, which is why it is off by default.
//
// Each series keeps History (14 days, at most MaxPoints = 40,320 points) of
// past data. Models are refitted every hour (Refit), and while the history
// is young each time it doubles; a seasonal model leaves the points observed during
// alerts out of its refits. NaN, duplicate and out-of-order points are
// counted and skipped; the sampling interval is the median of recent gaps,
// and a gap of more than five intervals resets the run count; a departure
// that persists for ShiftPoints (240) points on one side, or with For set
// for ShiftFor (4 hours) at the series' own sampling interval, is a level
// shift: the series is refitted with a level step (or, for a change of
// scale of five times or more such as a unit change, restarted from the
// new data) and the event's message says so, so a persistent change does
// not alert forever. A series that then comes back nearer the level it
// left than the one it moved to has ended that episode: the step is
// dropped (the episode's points stay in the history, so an episode that
// recurs, such as a young series' first weekend, is learnt by the
// seasonal terms) and the return does not alert. A shift that no alert
// covered (the budget, routine or shape tests held its first points back
// as a burst like earlier ones) is only reported, as Shifted; with
// ShiftAlerts, one in a bad direction alerts when it is adopted, from its
// first point, since a level that holds for hours is a change of regime
// whatever the series' bursts did. Its points are the new level, so the
// refits learn them, and the alert ends once the series is back inside
// the band around that level.
//
// A caller keeps one Detector per scope (DetectorOptions.Scope) and feeds
// it every catalog value each minute:
//
//	var fired []forecast.Alert
//	for id, v := range values {
//		if a, ok := det.Observe(id, at, v); ok && a.State == forecast.Firing {
//			fired = append(fired, a)
//		}
//	}
//	for _, g := range forecast.GroupAlerts(fired) {
//		// open one incident for g.Scope with g.Metrics
//	}
//
// GroupAlerts turns the alerts of one scope that fired in the same minute
// into one group, the unit that opens one incident. Cache keeps fitted
// models per series for callers that read history from a store, refitting
// them when older than a set age.
//
// # The backtest
//
// Backtest compares the detector with fixed thresholds on simulated weeks
// of catalog metrics with labelled anomaly windows; Simulate documents the
// generative model. Fixed thresholds get the same Consecutive and Clear rules and are
// tuned per metric, with the labels, to the dynamic detector's recall.
package forecast
