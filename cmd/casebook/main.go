// Command casebook is the Casebook console and its tools: serve, simulate,
// diagnose, eval, rules, user, token, backup and restore.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command runs one subcommand with its own arguments.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":    {"serve the console (default)", serveCmd},
		"simulate": {"run the simulated inference cluster or write labelled scenarios", simulateCmd},
		"diagnose": {"diagnose snapshots (JSON or JSON Lines) from a file or stdin", diagnoseCmd},
		"eval":     {"measure diagnosis accuracy on a labelled corpus", evalCmd},
		"detect":   {"replay a timestamp,value CSV through the dynamic-threshold detector", detectCmd},
		"backtest": {"compare dynamic thresholds with fixed ones on simulated labelled weeks", backtestCmd},
		"rules":    {"print Prometheus recording rules (or --alerts: alerting rules) from the catalog", rulesCmd},
		"user":     {"manage accounts: user add NAME --role viewer|reviewer|admin (password on stdin), list, set, delete", userCmd},
		"token":    {"manage API tokens: token add NAME --scope webhook|read|write (printed once), list, revoke ID", tokenCmd},
		"backup":   {"copy the archive consistently, even while serving: backup FILE --data DIR", backupCmd},
		"restore":  {"restore a backup into a stopped console's data directory: restore FILE --data DIR", restoreCmd},
	}
}

// errUsage marks an error that is the caller's fault; main exits 2 on it.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "casebook:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	cmds := commands()
	name := "serve"
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		usage(stdout, cmds)
		return nil
	}
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	c, ok := cmds[name]
	if !ok {
		usage(stderr, cmds)
		return fmt.Errorf("%w: unknown command %q", errUsage, name)
	}
	err := c.run(ctx, args, env, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: casebook [command] [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'casebook COMMAND -h' for a command's flags.")
}
