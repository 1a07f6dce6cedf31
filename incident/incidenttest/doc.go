// Package incidenttest holds test helpers for the incident service's
// entry points, shared by the incident and handlers tests: webhook
// messages as Alertmanager sends them.
package incidenttest
