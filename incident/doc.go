// Package incident is the incident service every entry point shares: the
// Alertmanager webhook, "Diagnose now", the dynamic-threshold detector and
// the review pages all open, diagnose and review incidents through one
// *Service.
//
// Opening an incident captures the scope's snapshot and the chart windows
// around the trigger (one capture shared by a storm of alerts on the same
// scope and second), diagnoses it against the knowledge base of reviewed
// incidents, and stores everything in one transaction. Reviewing one
// stores the label and teaches the diagnoser the case at once. The
// package also maps Alertmanager webhook messages to triggers, encodes
// diagnoses for storage, and decodes the trigger details it stores.
//
// It knows no HTTP and no templates: callers pass a context and values,
// and get values and errors back.
package incident
