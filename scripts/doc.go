// Package scripts holds the repository's shell scripts (ensure-test-deps,
// which make test-deps runs); its tests run them against stub commands.
package scripts
