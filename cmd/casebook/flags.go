package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// envName is the environment variable that sets a flag: --prometheus-url
// is CASEBOOK_PROMETHEUS_URL.
func envName(flagName string) string {
	return "CASEBOOK_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags applies CASEBOOK_* environment variables as defaults and then
// the command line, so flags win over the environment.
func parseFlags(fs *flag.FlagSet, args []string, env func(string) string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := env(envName(f.Name)); v != "" && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%w: %s=%q: %v", errUsage, envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// listFlag collects a repeatable or comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}
