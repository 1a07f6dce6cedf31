// Package testenv starts the real components that Casebook's integration
// tests run against (Prometheus, Alertmanager, headless Chromium, and the
// casebook binary itself as a child process) on free loopback ports with
// their own temporary configuration and data, and stops them when the test
// ends, also when it fails. A component that fails to start or dies is
// named, with its last log lines, in the test failure; Process.Fatalf and
// Browser.Fatalf do the same for failures a test finds while it runs.
//
// Chromium gets a fresh user-data directory per Browser, so two browsers in
// one test share no cookies or storage (a share link opened "elsewhere").
// GoBuild builds a binary for a test to run as a separate process, and
// SavePNG keeps screenshots under testout/ and fails on blank ones.
//
// The binaries come from Debian's packages prometheus, prometheus-alertmanager
// and chromium; `make test` installs them when missing.
package testenv
