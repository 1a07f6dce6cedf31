// Package static holds Casebook's own stylesheet and scripts, embedded into
// the binary. Nothing here is third-party code. URL returns a versioned
// path for each asset so that it can be served with a long cache lifetime.
package static
