// Package promrules generates Prometheus rule files from the metric catalog,
// so a remote Prometheus (or Thanos, Mimir, VictoriaMetrics) computes the
// same numbers Casebook computes in embedded mode.
//
// Recording rules keep one series per scope (model_name and pod; GPU
// metrics by pod alone, since dcgm-exporter series carry no model_name) and
// follow Prometheus's level:metric:operation naming:
//
//	scope:<id>:avg1m  the catalog expression over a 1-minute window, every minute
//	scope:<id>:min1m, scope:<id>:max1m   minimum and maximum inside the minute (gauges)
//	scope:<id>:avg1h, scope:<id>:min1h, scope:<id>:max1h   hourly aggregates of the 1m tier
//	model:<id>:avg1m, model:<id>:avg1h   engine metrics over a whole model (by model_name)
//
// In remote mode Casebook reads these series for chart ranges longer than
// a day (1m records up to 30 days, 1h records beyond), through ReadQuery,
// and falls back to the raw expressions when a Prometheus has no records.
//
// Alerting rules are fixed-threshold fallbacks, one per catalog metric, with
// labels that carry the scope (model_name, pod) and the catalog id
// (casebook_metric) so Casebook's Alertmanager webhook opens the incident on
// the right scope. Dynamic thresholds replace most of them once Casebook runs
// its own detector.
package promrules
