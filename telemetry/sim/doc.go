// Package sim is a simulated vLLM inference cluster.
package sim
