// Package watch runs the dynamic-threshold detector inside `casebook
// serve`: every interval it reads the newest minute values of every
// catalog metric of every scope from the telemetry, feeds them to one
// forecast.Detector per scope, opens one incident per anomaly through the
// console's incident path, and forwards the per-metric alerts to an
// Alertmanager when one is configured.
//
// # Rounds
//
// Watcher.Round is one evaluation: list the scopes (Source.Scopes), read
// each scope's catalog series from the minute after the last one it fed up
// to the current minute at a 1-minute step, and observe every point in
// time order per metric. Warm scopes that share their next minute (all of
// them in the steady state) are read together, one query per metric for
// the whole fleet (Source.FleetRange); a scope warming up, or every scope
// when that read fails, is read alone (Source.Range). The first round of a scope reads
// History (default 7 days) to warm the scope's detector up; the detector
// fits its seasonal models from that history and refits them hourly
// (forecast.DetectorOptions.Refit). Events of the warm-up are not acted
// on, except alerts that fired in its last minutes (Fresh), which are
// still news. Run calls Round every Interval until its context ends.
//
// # Incidents
//
// The detector raises a Firing event only when a metric leaves its band
// (for Consecutive points in its bad direction) and a Resolved event when
// it has been back for Clear points, so a metric that stays out of band
// opens nothing new. The Firing alerts of one scope in one minute form one
// group (forecast.GroupAlerts) and open ONE incident (Opener.Open, trigger
// kind detector) titled with the metrics, its trigger detail a Detail
// listing each metric's value, forecast, band and distance outside the band
// in standard errors. Metrics of the same scope that fire within
// JoinWindow (default 5 min) of an incident's minute join that incident
// instead of opening another: one anomaly often crosses the bands of its
// metrics a minute or two apart. A metric that resolves and fires again
// later opens a new incident. A model's group joins the incident one of
// its instances opened within JoinWindow: the model's means move because
// the instance did.
//
// With Corroborate set (casebook serve sets 10 minutes), alerts of one
// dimension wait: their incident opens when a metric of another dimension
// of the scope fires, taking them along, or when they have lasted
// Corroborate, and nothing opens if they return to their bands first. A
// fault moves its mechanism and its symptom together (clock and TPOT, KV
// cache and queue); the latencies of one request move together by
// construction and do not corroborate each other; a few-minute excursion
// of one dimension is mostly noise. The trigger's minute is the first
// alert's.
//
// # Alertmanager
//
// With an Alertmanager URL every round posts the firing alerts (one per
// scope and metric, alertname CasebookDynamicThreshold, labels model_name,
// pod, casebook_metric and severity, generatorURL the incident's page) to
// /api/v2/alerts, and the alerts that resolved in the round with their
// endsAt. Reposting every round keeps them alive in the Alertmanager. A
// failed post is retried with exponential backoff a bounded number of
// times; failures and recoveries are logged once per change.
//
// # Bad input
//
// NaN and infinite values, gaps and out-of-order points are skipped or
// reset by the detector (forecast.Detector.Observe). A telemetry error
// skips the scope (or the round) and is logged once until that scope reads
// again; a scope that disappears from Scopes has its firing alerts
// resolved and is forgotten after History; nothing panics and a broken
// source raises no alerts.
package watch
