// Package delivery is Casebook's one way to post to another system: the
// change-request webhook and the detector's Alertmanager forwarder both
// check their URL, post, classify the answer and retry with exponential
// backoff and jitter through it.
package delivery
