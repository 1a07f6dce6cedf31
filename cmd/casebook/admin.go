package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/store"
)

// parseWithArgs parses flags that may come before or after positional
// arguments (casebook user add NAME --role admin) and returns the
// positional ones.
func parseWithArgs(fs *flag.FlagSet, args []string, env func(string) string, stderr io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args, env, stderr); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// openArchive opens the data directory's archive for a command-line change,
// recorded in the audit log as the operating-system user. A read-only
// command (a list) opens it read-only and creates nothing; every command
// names --data when the directory or the archive is missing.
func openArchive(ctx context.Context, data string, readOnly bool) (*store.Store, context.Context, error) {
	if st, err := os.Stat(data); err != nil || !st.IsDir() {
		return nil, ctx, fmt.Errorf("%w: data directory %s does not exist (set it with --data or %s)", errUsage, data, envName("data"))
	}
	path := filepath.Join(data, "casebook.db")
	open := store.Open
	if readOnly {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, ctx, fmt.Errorf("%w: no archive in %s: %s does not exist (is --data or %s the console's data directory?)", errUsage, data, path, envName("data"))
		}
		open = store.OpenReadOnly
	}
	st, err := open(ctx, path)
	if err != nil {
		return nil, ctx, err
	}
	who := os.Getenv("USER")
	if who == "" {
		who = "cli"
	}
	return st, store.WithActor(ctx, store.Actor{Name: "cli:" + who}), nil
}

// isHelp reports whether arg asks for a command's usage.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// subUsage prints a command's subcommands and the flags they share.
func subUsage(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "usage: casebook %s\n\nflags:\n", synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func userCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	const synopsis = "user add NAME --role ROLE | user set NAME [--role ROLE] | user list | user delete NAME"
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, synopsis)
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("user "+sub, flag.ContinueOnError)
	data := fs.String("data", "./data", "data directory")
	role := fs.String("role", "viewer", "viewer, reviewer or admin")
	pwFile := fs.String("password-file", "", "read the password from this file (default: stdin); - for stdin")
	noPassword := fs.Bool("no-password", false, "no password: the account signs in through the authenticating proxy only, which then takes its role from here")
	if isHelp(sub) {
		subUsage(stdout, fs, synopsis)
		return nil
	}
	pos, err := parseWithArgs(fs, args, env, stderr)
	if err != nil {
		return err
	}
	st, ctx, err := openArchive(ctx, *data, sub == "list")
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	switch sub {
	case "add", "set":
		if len(pos) != 1 {
			return fmt.Errorf("%w: user %s takes one NAME", errUsage, sub)
		}
		if err := auth.ValidUserName(pos[0]); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if _, err := auth.ParseRole(*role); err != nil {
			return fmt.Errorf("%w: --role: %v", errUsage, err)
		}
		var hash []byte
		if !*noPassword {
			pw, err := readPassword(*pwFile)
			if err != nil {
				return err
			}
			if hash, err = auth.HashPassword(pw); err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
		}
		if sub == "set" {
			u, err := st.UserByName(ctx, pos[0])
			if err != nil {
				return err
			}
			if _, err := st.UpdateUser(ctx, u.ID, *role, hash, now); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "user %s: role %s%s\n", pos[0], *role, map[bool]string{true: ", new password", false: ""}[hash != nil])
			return nil
		}
		if _, err := st.AddUser(ctx, pos[0], *role, hash, now); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s added as %s\n", pos[0], *role)
	case "list":
		us, err := st.Users(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tPASSWORD\tCREATED")
		for _, u := range us {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", u.Name, u.Role, len(u.PasswordHash) > 0, u.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	case "delete":
		if len(pos) != 1 {
			return fmt.Errorf("%w: user delete takes one NAME", errUsage)
		}
		u, err := st.UserByName(ctx, pos[0])
		if err != nil {
			return err
		}
		if err := st.DeleteUser(ctx, u.ID, now); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s deleted\n", pos[0])
	default:
		return fmt.Errorf("%w: user add|set|list|delete, got %q", errUsage, sub)
	}
	return nil
}

// readPassword reads the first line of a file, or of stdin.
func readPassword(file string) (string, error) {
	var r io.Reader = os.Stdin
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("password file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func tokenCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	const synopsis = "token add NAME --scope webhook|read|write | token list | token revoke ID"
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, synopsis)
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	data := fs.String("data", "./data", "data directory")
	scope := fs.String("scope", "read", "webhook (Alertmanager), read or write")
	if isHelp(sub) {
		subUsage(stdout, fs, synopsis)
		return nil
	}
	pos, err := parseWithArgs(fs, args, env, stderr)
	if err != nil {
		return err
	}
	st, ctx, err := openArchive(ctx, *data, sub == "list")
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "add":
		if len(pos) != 1 {
			return fmt.Errorf("%w: token add takes one NAME", errUsage)
		}
		if err := auth.ValidUserName(pos[0]); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if _, err := auth.ParseScope(*scope); err != nil {
			return fmt.Errorf("%w: --scope: %v", errUsage, err)
		}
		secret, err := auth.NewToken(auth.TokenPrefix)
		if err != nil {
			return err
		}
		t, err := st.AddToken(ctx, pos[0], *scope, auth.HashToken(secret), time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "token %d %q (scope %s); it is shown only this once:\n", t.ID, t.Name, t.Scope)
		fmt.Fprintln(stdout, secret)
	case "list":
		ts, err := st.Tokens(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tCREATED BY\tCREATED\tREVOKED")
		for _, t := range ts {
			rev := "-"
			if !t.RevokedAt.IsZero() {
				rev = t.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Scope, t.CreatedBy, t.CreatedAt.Format(time.RFC3339), rev)
		}
		return tw.Flush()
	case "revoke":
		if len(pos) != 1 {
			return fmt.Errorf("%w: token revoke takes one ID", errUsage)
		}
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil {
			return fmt.Errorf("%w: token id %q", errUsage, pos[0])
		}
		if err := st.RevokeToken(ctx, id, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %d revoked\n", id)
	default:
		return fmt.Errorf("%w: token add|list|revoke, got %q", errUsage, sub)
	}
	return nil
}
