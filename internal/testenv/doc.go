// Package testenv starts the real components that Casebook's integration
// tests run against (Prometheus, Alertmanager, headless Chromium) on free
// loopback ports with their own temporary configuration and data, and stops
// them when the test ends, also when it fails. A component that fails to
// start or dies is named, with its last log lines, in the test failure.
//
// The binaries come from Debian's packages prometheus, prometheus-alertmanager
// and chromium; `make test` installs them when missing.
package testenv
