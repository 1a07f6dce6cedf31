// Package handlerstest provides hand-written fakes of the interfaces the
// handlers consume: a Telemetry holding a week of plausible one-minute
// series for a small cluster (with an ongoing incident on one instance), a
// Diagnoser, a FaultInjector and a simple deviation function. Handler,
// screenshot and benchmark tests share them.
package handlerstest
