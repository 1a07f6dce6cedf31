// Package change turns a diagnosis's structured actions into change
// requests a team's change process can take: the knob catalog (each
// engine's flag, Helm values path, valid range), the current value from
// the engine's info labels or a configuration file, the concrete proposed
// value with its reason, the configuration diff, the next deployment
// window, the webhook payload, the capacity check for scale-out advice and
// the outcome of an applied change (when it is due, which windows to read,
// the verdict). It encodes and decodes the request documents and outcomes
// the archive stores (Request.JSON, DecodeRequest, Outcome.Encode,
// DecodeOutcome).
//
// A request is written in the language of the person who asks for it
// (BuildInput.Lang, "zh-CN" or English): its titles, reasons, capacity
// summary and Markdown are printed from package i18n's catalogs and the
// diagnosis texts of package diagnose; ids, knobs, flags and JSON field
// names never change. An outcome's reasons are measured without a reader
// and stay English.
//
// Jobs runs the background work: delivering requests to the webhook with
// retries, re-trying pending deliveries after a restart, and measuring
// outcomes once their window has passed. It reads and writes the archive
// through the small JobStore interface; no HTTP server or templates.
package change
